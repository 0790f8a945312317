package ingest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/identity"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/subject"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Service is the ingestion core (New builds it).
type Service struct {
	cfg Config
	d   Deps
}

// Publish ingests one raw envelope.
func (s *Service) Publish(ctx context.Context, raw []byte) (envelope.Result, error) {
	p, res, err := s.prepare(ctx, raw, s.d.Now(), newOwner())
	if p == nil || err != nil {
		return res, err
	}
	err = s.d.Ledger.Commit(ctx, p.commit)
	var exists *ledger.ExistsError
	if errors.As(err, &exists) {
		return s.duplicate(ctx, p, exists.Key)
	}
	if err != nil {
		return envelope.Result{}, err
	}
	jobs, err := s.jobs(ctx, p)
	if err != nil {
		return envelope.Result{}, err
	}
	return s.settled(ctx, p, s.dispatcher().Dispatch(ctx, jobs)), nil
}

// plan is an accepted envelope ready to commit: its record, its outbox
// rows (leased to the sender) and its logger.
type plan struct {
	ev       envelope.Event
	producer topology.Producer
	log      *slog.Logger
	commit   CommitParams
	owner    string
}

// prepare validates and routes raw for owner: a plan to commit, or (plan
// nil) the result that ends the publish (rejected, unrouted), or an error
// when a claim-checked payload could not be stored.
func (s *Service) prepare(ctx context.Context, raw []byte, now time.Time, owner string) (*plan, envelope.Result, error) {
	ev, rerr := envelope.Parse(raw, now, s.cfg.Limits)
	if rerr != nil {
		return nil, envelope.Reject(peekID(raw), rerr), nil
	}
	log := s.d.Log.With("eventId", ev.ID, "tenantId", ev.TenantID, "type", ev.Type, "source", ev.Source)
	producer, ok := s.d.Topology.Producer(ev.Source)
	if !ok {
		return nil, envelope.Reject(ev.ID, &envelope.Error{Code: envelope.CodeUnknownSource, Field: "source",
			Message: fmt.Sprintf("source %q is not a registered producer", ev.Source)}), nil
	}
	if !producer.Allows(ev.Type) {
		return nil, envelope.Reject(ev.ID, &envelope.Error{Code: envelope.CodeTypeNotAllowed, Field: "type",
			Message: fmt.Sprintf("producer %q may not publish %q", ev.Source, ev.Type)}), nil
	}
	topics := s.d.Topology.Route(ev.Type)
	if len(topics) == 0 {
		log.InfoContext(ctx, "ingest: no route for type; nothing stored")
		return nil, envelope.Result{Status: envelope.StatusUnrouted, EventID: ev.ID, Topics: []string{}, PendingTopics: []string{}}, nil
	}

	key := ledger.Key(producer, ev.TenantID, ev.ID)
	rec := ledger.Record{
		Key:         key,
		Event:       ev,
		Topics:      topics,
		PayloadHash: identity.Of(producer, ev),
		OrderingKey: subject.OrderingKey(producer, ev),
		Status:      ledger.StatusReceived,
		CreatedAt:   now,
		ExpiresAt:   now.Add(s.cfg.Retention),
	}
	if s.d.ClaimCheck.Needed(len(ev.Payload)) {
		// Stored before the commit so a committed record never points at a
		// missing object. The key is deterministic: a retry overwrites it.
		ref, err := s.d.ClaimCheck.Put(ctx, ev.TenantID, ev.ID, ev.Payload)
		if err != nil {
			return nil, envelope.Result{EventID: ev.ID}, err
		}
		rec.Event.Payload, rec.Event.PayloadRef = nil, ref
	}

	lease := now.Add(s.cfg.Lease)
	rows := make([]outbox.Row, len(topics))
	for i, name := range topics {
		tp, _ := s.d.Topology.Topic(name)
		rows[i] = outbox.Row{
			Key: key, EventID: ev.ID, Topic: name, TenantID: ev.TenantID, Type: ev.Type,
			Status: outbox.StatusPending, MaxAttempts: tp.MaxOutboxAttempts,
			// The fresh row starts leased to this sender: the sweeper cannot
			// race the optimistic send below.
			NextRetryAt: lease, LeaseUntil: lease, LeaseOwner: owner,
			CreatedAt: now, UpdatedAt: now,
		}
	}
	commit := CommitParams{Record: rec, Rows: rows}
	if ledger.Scoped(key) && now.Before(s.cfg.LegacyKeysUntil) {
		commit.LegacyKey = ledger.LegacyKey(ev.ID)
	}
	return &plan{ev: ev, producer: producer, log: log, commit: commit, owner: owner}, envelope.Result{}, nil
}

// jobs are the sends of a committed plan, one per topic.
func (s *Service) jobs(ctx context.Context, p *plan) ([]outbox.Job, error) {
	jobs := make([]outbox.Job, 0, len(p.commit.Rows))
	for _, row := range p.commit.Rows {
		job, err := s.job(ctx, p.commit.Record, row.Topic, p.owner, 0)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

// settled is the result of a committed plan whose sends ended with
// outcomes (one per topic).
func (s *Service) settled(ctx context.Context, p *plan, outcomes []outbox.Outcome) envelope.Result {
	topics := p.commit.Record.Topics
	if pending := unsent(outcomes); len(pending) > 0 {
		p.log.WarnContext(ctx, "ingest: stored, some topics pending", "pendingTopics", pending)
		return envelope.Result{Status: envelope.StatusAccepted, EventID: p.ev.ID, Topics: topics, PendingTopics: pending}
	}
	p.log.InfoContext(ctx, "ingest: enqueued", "topics", topics)
	return envelope.Result{Status: envelope.StatusEnqueued, EventID: p.ev.ID, Topics: topics, PendingTopics: []string{}}
}

// duplicate handles a publish of an id already in the ledger (docs/architecture.md §5, guarantee 3):
// the same content is acknowledged and any pending or failed row nobody holds
// is claimed and sent now; different content is a conflict. The event
// stored under key may have been erased: the claim-checked payload p
// stored before its commit found the event is then deleted (see discard).
func (s *Service) duplicate(ctx context.Context, p *plan, key string) (envelope.Result, error) {
	log, producer, incoming := p.log, p.producer, p.ev
	id := incoming.ID
	stored, rows, err := s.d.Ledger.Load(ctx, key)
	if err != nil {
		return envelope.Result{}, fmt.Errorf("ingest: load duplicate %s: %w", key, err)
	}
	if err := s.discard(ctx, p, stored); err != nil {
		return envelope.Result{}, err
	}
	if !identity.Same(stored.PayloadHash, producer, incoming) {
		log.WarnContext(ctx, "ingest: idempotency conflict")
		return envelope.Reject(id, &envelope.Error{Code: envelope.CodeIdempotencyConflict, Field: "id",
			Message: fmt.Sprintf("event id %q was already used for different content; use a new id for a new event", id)}), nil
	}

	now := s.d.Now()
	owner := newOwner()
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		sent    = map[string]bool{}
		loadErr error
	)
	for _, row := range rows {
		if !row.Claimable(now) {
			continue
		}
		wg.Go(func() {
			ok, err := s.d.Outbox.Claim(ctx, outbox.ClaimParams{Row: row.Ref(), Owner: owner, Now: now, Lease: s.cfg.Lease})
			if err != nil || !ok {
				if err != nil {
					log.WarnContext(ctx, "ingest: claim for re-drive failed", "topic", row.Topic, "error", err)
				}
				return
			}
			job, err := s.job(ctx, stored, row.Topic, owner, row.Attempts)
			if err != nil {
				mu.Lock()
				loadErr = err
				mu.Unlock()
				return
			}
			o := s.dispatcher().Dispatch(ctx, []outbox.Job{job})[0]
			mu.Lock()
			sent[row.Topic] = o.Sent
			mu.Unlock()
		})
	}
	wg.Wait()
	if loadErr != nil {
		log.ErrorContext(ctx, "ingest: re-drive could not build message", "error", loadErr)
	}

	pending := []string{}
	for _, row := range rows {
		if !row.Delivered() && !sent[row.Topic] {
			pending = append(pending, row.Topic)
		}
	}
	redriven := []string{}
	for topic, ok := range sent {
		if ok {
			redriven = append(redriven, topic)
		}
	}
	slices.Sort(redriven)
	log.InfoContext(ctx, "ingest: duplicate acknowledged", "redriven", redriven, "pendingTopics", pending)
	return envelope.Result{Status: envelope.StatusDuplicate, EventID: id, Topics: stored.Topics, PendingTopics: pending}, nil
}

// discard deletes the claim-checked payload a publish stored (before its
// commit, which then found the event stored) when the stored event was
// erased: a late retry (Stripe retries for days, any producer may retry)
// must not leave a copy of the subject's data behind (docs/architecture.md
// §5, guarantee 13). Every version of the object goes (the bucket is
// versioned). It costs nothing on the path of a new event, which cannot
// know before its commit whether the id is stored, nor on a duplicate of
// an event that was not erased; a publish that read the event before the
// erasure marked it stored its object before that, and the erasure's
// second pass deletes it. An error fails the publish: the producer
// retries, and the retry deletes it.
func (s *Service) discard(ctx context.Context, p *plan, stored ledger.Record) error {
	ref := p.commit.Record.Event.PayloadRef
	if ref == nil || !stored.Erased() {
		return nil
	}
	ids, err := s.d.Payloads.Erase(ctx, ref.Bucket, ref.Key)
	if err != nil {
		return fmt.Errorf("ingest: delete the payload of erased event %s: %w", stored.Key, err)
	}
	p.log.InfoContext(ctx, "ingest: a retry of an erased event; its claim-checked payload deleted", "versions", len(ids))
	return nil
}

func (s *Service) job(ctx context.Context, rec ledger.Record, topic, owner string, attempts int) (outbox.Job, error) {
	m, err := rec.Message(topic)
	if err != nil {
		return outbox.Job{}, err
	}
	if s.d.TraceHeader != nil {
		m.TraceHeader = s.d.TraceHeader(ctx)
	}
	return outbox.Job{Message: m, Owner: owner, Attempts: attempts, RetryDelay: s.cfg.RetryDelay}, nil
}

func (s *Service) dispatcher() *outbox.Dispatcher {
	return &outbox.Dispatcher{Sender: s.d.Sender, Store: s.d.Outbox, Now: s.d.Now, Log: s.d.Log, Later: s.d.Later}
}

func unsent(outcomes []outbox.Outcome) []string {
	var pending []string
	for _, o := range outcomes {
		if !o.Sent {
			pending = append(pending, o.Topic)
		}
	}
	return pending
}

// peekID recovers the id of a rejected envelope when it has a usable one, so
// the rejection is traceable in logs and results.
func peekID(raw []byte) string {
	var probe struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(raw, &probe) != nil {
		return ""
	}
	if id, ok := probe.ID.(string); ok && len(id) <= envelope.MaxIDLen {
		return id
	}
	return ""
}

// newOwner is a lease owner token unique to one sender attempt.
func newOwner() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
