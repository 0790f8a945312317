package cachepurge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

// Platform event of a purge request.
const (
	// Source is the purge API's producer name.
	Source = "purge-api"
	// TypeRequested is the event a purge request becomes.
	TypeRequested = "cache.purge.requested"
)

// Request is the payload of a cache.purge.requested event.
type Request struct {
	JobID    string   `json:"jobId"`
	TenantID string   `json:"tenantId"`
	Tags     []string `json:"tags"`
}

// IngressConfig tunes ingress.
type IngressConfig struct {
	// Window is tier 1's coalescing window (1s..60s).
	Window time.Duration
}

// WithDefaults fills unset fields.
func (c IngressConfig) WithDefaults() IngressConfig {
	if c.Window == 0 {
		c.Window = CoalesceWindow
	}
	return c
}

// Validate checks the config.
func (c IngressConfig) Validate() error {
	if c.Window < time.Second || c.Window > CoalesceTTL {
		return fmt.Errorf("purge: coalescing window %s must be 1s..%s (the lock's retention)", c.Window, CoalesceTTL)
	}
	return nil
}

// IngressDeps are what ingress talks to.
type IngressDeps struct {
	Jobs      Jobs
	Publisher Publisher
	Now       func() time.Time
	Log       *slog.Logger
}

// Ingress is the purge API: it validates, coalesces and queues requests.
type Ingress struct {
	cfg IngressConfig
	d   IngressDeps
}

// NewIngress builds ingress; it refuses a config or dependencies that
// cannot work.
func NewIngress(cfg IngressConfig, d IngressDeps) (*Ingress, error) {
	cfg = cfg.WithDefaults()
	errs := []error{cfg.Validate()}
	if d.Jobs == nil || d.Publisher == nil {
		errs = append(errs, errors.New("purge: Jobs and Publisher are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.Now, d.Log = clock.Or(d.Now), logging.OrDiscard(d.Log)
	return &Ingress{cfg: cfg, d: d}, nil
}

// PurgeTags queues a purge of tags for tenant (spec 001 §2.1). Nothing is
// written for a refused request. The same tags (in any order, any case)
// within the coalescing window join the job already queued for them;
// once that job is being processed its API call may already be out, so a
// new job is queued instead.
func (s *Ingress) PurgeTags(ctx context.Context, tenant string, tags []string) Result {
	norm, rerr := NormalizeTags(tenant, tags)
	if rerr != nil {
		return Refused(rerr)
	}
	hash := TagsHash(norm)
	log := s.d.Log.With("tenantId", tenant, "tags", len(norm))
	for attempt := 0; attempt < 3; attempt++ {
		now := s.d.Now()
		lock, found, err := s.d.Jobs.Lock(ctx, tenant, hash)
		if err != nil {
			return s.unavailable(ctx, log, "read the coalesce lock", err)
		}
		seen := ""
		if found {
			seen = lock.JobID
			if now.Before(lock.Until) {
				job, ok, err := s.d.Jobs.Job(ctx, lock.JobID)
				if err != nil {
					return s.unavailable(ctx, log, "read the coalesced job", err)
				}
				if ok && job.Status == StatusQueued {
					log.InfoContext(ctx, "purge: coalesced into a queued job", "jobId", job.JobID)
					at := job.EnqueuedAt
					return Result{OK: true, JobID: job.JobID, Status: StatusQueued, EnqueuedAt: &at, Coalesced: true}
				}
			}
		}
		job := Job{JobID: NewJobID(), TenantID: tenant, Tags: norm, Status: StatusQueued, EnqueuedAt: now.UTC()}
		job.EventID = job.JobID
		l := Lock{TenantID: tenant, Hash: hash, JobID: job.JobID, Until: now.Add(s.cfg.Window)}
		err = s.d.Jobs.Create(ctx, CreateParams{Job: job, Lock: l, Seen: seen})
		if errors.Is(err, ErrLockTaken) {
			continue // a concurrent request created it: coalesce into that one
		}
		if err != nil {
			return s.unavailable(ctx, log, "create the job", err)
		}
		if err := s.publish(ctx, job); err != nil {
			// The job never entered the platform: no later request may
			// coalesce into it, and it is failed for whoever asks.
			if rerr := s.d.Jobs.ReleaseLock(ctx, l); rerr != nil {
				log.ErrorContext(ctx, "purge: could not release the lock of an unqueued job", "jobId", job.JobID, "error", rerr)
			}
			failed := s.d.Now().UTC()
			job.Status, job.FailedAt = StatusFailed, &failed
			job.Error = &Error{Code: CodeUnavailable, Message: "the request could not be queued: " + err.Error()}
			if serr := s.d.Jobs.Save(ctx, job); serr != nil {
				log.ErrorContext(ctx, "purge: could not mark an unqueued job failed", "jobId", job.JobID, "error", serr)
			}
			return s.unavailable(ctx, log, "queue the job", err)
		}
		log.InfoContext(ctx, "purge: job queued", "jobId", job.JobID)
		at := job.EnqueuedAt
		return Result{OK: true, JobID: job.JobID, Status: StatusQueued, EnqueuedAt: &at}
	}
	return s.unavailable(ctx, log, "coalesce", errors.New("the coalesce lock kept changing"))
}

// publish puts the job's request into the platform.
func (s *Ingress) publish(ctx context.Context, job Job) error {
	payload, err := json.Marshal(Request{JobID: job.JobID, TenantID: job.TenantID, Tags: job.Tags})
	if err != nil {
		return err
	}
	raw, err := json.Marshal(envelope.Event{
		SchemaVersion: envelope.SchemaVersion, ID: job.JobID, TenantID: job.TenantID, Type: TypeRequested,
		Source: Source, Timestamp: job.EnqueuedAt, Payload: payload,
	})
	if err != nil {
		return err
	}
	res, err := s.d.Publisher.Publish(ctx, raw)
	if err != nil {
		return err
	}
	switch res.Status {
	case envelope.StatusEnqueued, envelope.StatusAccepted, envelope.StatusDuplicate:
		return nil
	}
	if res.Error != nil {
		return fmt.Errorf("ingest answered %s: %s: %s", res.Status, res.Error.Code, res.Error.Message)
	}
	return fmt.Errorf("ingest answered %s", res.Status)
}

func (s *Ingress) unavailable(ctx context.Context, log *slog.Logger, what string, err error) Result {
	log.ErrorContext(ctx, "purge: "+what+" failed", "error", err)
	return Refused(&Error{Code: CodeUnavailable, Message: "the purge could not be queued right now (" + what + "); retry"})
}

// Status returns a job (spec 001 §2.2); nil for an unknown or expired job
// (the store's TTL deletes late: expired is gone).
func (s *Ingress) Status(ctx context.Context, jobID string) (*Job, error) {
	return (&Views{Jobs: s.d.Jobs, Now: s.d.Now}).Job(ctx, jobID)
}
