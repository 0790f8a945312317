package jobkinds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// KindErasure is the subject erasure's kind name.
const KindErasure = "subject-erasure"

// ErasedMarker replaces an erased payload (and incident body): see
// ledger.ErasedPayload.
var ErasedMarker = json.RawMessage(ledger.ErasedPayload)

// ErasureStore is what an erasure reads and rewrites. Every write carries
// the step's lease (fenced): a step whose lease was taken over changes
// nothing.
type ErasureStore interface {
	// ListTenant pages a tenant's events, newest first (the index's
	// projection: subject, no payloads).
	ListTenant(ctx context.Context, q operator.TenantQuery) ([]ledger.Record, string, error)
	// Load reads one whole event: its ledger item and its outbox rows.
	Load(ctx context.Context, key string) (ledger.Record, []outbox.Row, error)
	// EraseEvent replaces the event's payload (and claim-check reference)
	// with ErasedMarker, fenced by lease.
	EraseEvent(ctx context.Context, lease jobs.Lease, key string, at time.Time) error
	// RedactDispatch replaces an outbox row's lastError (which may quote
	// a subscriber's answer about the subject) with incident.ErasedText,
	// fenced by lease; a row gone meanwhile is no error.
	RedactDispatch(ctx context.Context, lease jobs.Lease, row outbox.RowRef) error
	// Incident reads an incident (incident.ErrNotFound for none).
	Get(ctx context.Context, id string) (incident.Incident, error)
	// SaveFenced writes inc (optimistic on its version), fenced by lease.
	SaveFenced(ctx context.Context, lease jobs.Lease, inc incident.Incident) error
	// Holds fails unless the step still holds its lease: object deletes,
	// which cannot carry a condition, are preceded by it.
	Holds(ctx context.Context, lease jobs.Lease) error
}

// Deleter erases objects and proves them gone. Buckets are versioned, so
// both are about every version of an object, not its current one.
type Deleter interface {
	// Erase deletes every version of the object (delete markers
	// included) and returns the version ids deleted.
	Erase(ctx context.Context, bucket, key string) ([]string, error)
	// Versions lists the version ids still stored under the key.
	Versions(ctx context.Context, bucket, key string) ([]string, error)
	Put(ctx context.Context, bucket, key string, body []byte) error
}

// ErasureArgs name the subject (the envelope subject) to erase.
type ErasureArgs struct {
	Subject string `json:"subject"`
}

// Deletion is positive evidence: an object's versions deleted (each by
// id) and then none of them listed any more.
type Deletion struct {
	Bucket          string    `json:"bucket"`
	Key             string    `json:"key"`
	VersionIDs      []string  `json:"versionIds"`
	ConfirmedAbsent time.Time `json:"confirmedAbsentAt"`
}

// ErasureResult is the job's result; EvidenceKey is the object listing
// every deletion.
type ErasureResult struct {
	Erased         int        `json:"erased"`
	ObjectsDeleted int        `json:"objectsDeleted"`
	Incidents      int        `json:"incidentsRedacted"`
	Dispatches     int        `json:"dispatchesRedacted"`
	EvidenceKey    string     `json:"evidenceKey"`
	Deletions      []Deletion `json:"deletions,omitempty"`
}

type erasureCheckpoint struct {
	Cursor     string     `json:"cursor,omitempty"`
	Erased     int        `json:"erased"`
	Incidents  int        `json:"incidents"`
	Dispatches int        `json:"dispatches,omitempty"`
	Deletions  []Deletion `json:"deletions,omitempty"`
}

// maxInlineEvidence bounds the deletions listed in the result itself.
const maxInlineEvidence = 50

// Erasure builds the subject-erasure kind: one page of the tenant's events
// per step; each event of the subject has its payload redacted (fenced),
// then its claim-checked payload, its incidents' bodies and payload copies
// deleted and confirmed absent, and its incidents redacted (fenced). A new
// erasure of the same subject supersedes the running one (a new generation
// that starts over).
func Erasure(store ErasureStore, objects Deleter, bucket string) jobs.Kind {
	return jobs.Kind{
		Name:      KindErasure,
		Supersede: true,
		// One key per subject (hashed: a subject may hold any character),
		// so a new erasure of a subject supersedes the running one.
		KeyOf: func(raw json.RawMessage) string {
			var a ErasureArgs
			_ = json.Unmarshal(raw, &a)
			sum := sha256.Sum256([]byte(a.Subject))
			return "subject-" + hex.EncodeToString(sum[:20])
		},
		StepTimeout: 2 * time.Minute,
		CheckArgs: func(raw json.RawMessage) error {
			var a ErasureArgs
			if err := strictArgs(raw, &a); err != nil {
				return err
			}
			// As the envelope counts it (characters, not bytes): any
			// subject ingest accepted can be erased.
			if !envelope.ValidSubject(a.Subject) {
				return &jobs.RequestError{Code: jobs.CodeInvalidArgs, Message: fmt.Sprintf("subject must be 1 to %d printable characters", envelope.MaxSubjectLen)}
			}
			return nil
		},
		Handler: jobs.HandlerFunc(func(ctx context.Context, s jobs.Step) (jobs.Outcome, error) {
			var a ErasureArgs
			if err := s.Args(&a); err != nil {
				return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
			}
			var cp erasureCheckpoint
			if err := s.Resume(&cp); err != nil {
				return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
			}
			recs, next, err := store.ListTenant(ctx, operator.TenantQuery{TenantID: s.Job.TenantID, Limit: 100, Cursor: cp.Cursor})
			if err != nil {
				return jobs.Outcome{}, err
			}
			for _, r := range recs {
				if r.Event.Subject != a.Subject {
					continue
				}
				r, rows, err := store.Load(ctx, r.Key)
				if errors.Is(err, ledger.ErrNotFound) {
					continue // expired since the listing
				}
				if err != nil {
					return jobs.Outcome{}, err
				}
				// Objects first, then the fenced redaction that drops their
				// references: a crash in between leaves the references, so
				// the retry deletes (and confirms) again instead of leaking.
				if ref := r.Event.PayloadRef; ref != nil {
					if err := store.Holds(ctx, s.Lease); err != nil {
						return jobs.Outcome{}, err
					}
					d, err := deleteConfirmed(ctx, objects, ref.Bucket, ref.Key)
					if err != nil {
						return jobs.Outcome{}, err
					}
					cp.Deletions = append(cp.Deletions, d)
				}
				if string(r.Event.Payload) != string(ErasedMarker) || r.Event.PayloadRef != nil {
					if err := store.EraseEvent(ctx, s.Lease, r.Key, time.Now().UTC()); err != nil {
						return jobs.Outcome{}, err
					}
					cp.Erased++
				}
				for _, row := range rows {
					if row.LastError == "" || row.LastError == incident.ErasedText {
						continue
					}
					if err := store.RedactDispatch(ctx, s.Lease, outbox.RowRef{Key: r.Key, Topic: row.Topic}); err != nil {
						return jobs.Outcome{}, err
					}
					cp.Dispatches++
				}
				for _, topic := range r.Topics {
					n, dels, err := eraseIncident(ctx, store, objects, s.Lease, incident.ID(r.Key, topic))
					if err != nil {
						return jobs.Outcome{}, err
					}
					cp.Incidents += n
					cp.Deletions = append(cp.Deletions, dels...)
				}
			}
			cp.Cursor = next
			if next != "" {
				return jobs.Continue(cp), nil
			}
			res := ErasureResult{Erased: cp.Erased, ObjectsDeleted: len(cp.Deletions), Incidents: cp.Incidents, Dispatches: cp.Dispatches, EvidenceKey: s.Scope + "erasure-evidence.json"}
			evidence, err := json.MarshalIndent(map[string]any{"jobId": s.Job.ID, "tenantId": s.Job.TenantID, "subject": a.Subject, "generation": s.Job.Generation,
				"erased": cp.Erased, "incidentsRedacted": cp.Incidents, "dispatchesRedacted": cp.Dispatches, "deletions": nonNil(cp.Deletions)}, "", "  ")
			if err != nil {
				return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
			}
			if err := objects.Put(ctx, bucket, res.EvidenceKey, evidence); err != nil {
				return jobs.Outcome{}, err
			}
			if len(cp.Deletions) <= maxInlineEvidence {
				res.Deletions = cp.Deletions
			}
			return jobs.Done(res), nil
		}),
	}
}

// eraseIncident deletes an incident's stored body and payload copy
// (confirmed absent, while the lease holds), then redacts it (body, error
// text, history notes: incident.Erased), fenced; 0 when there is none or
// it was redacted already.
func eraseIncident(ctx context.Context, store ErasureStore, objects Deleter, lease jobs.Lease, id string) (int, []Deletion, error) {
	inc, err := store.Get(ctx, id)
	if err != nil {
		if isNotFound(err) {
			return 0, nil, nil
		}
		return 0, nil, err
	}
	if inc.IsErased(ErasedMarker) {
		return 0, nil, nil
	}
	keys := slices.DeleteFunc([]string{inc.Body.Key, inc.Body.PayloadKey}, func(k string) bool { return k == "" })
	if len(keys) > 0 {
		if err := store.Holds(ctx, lease); err != nil {
			return 0, nil, err
		}
	}
	var dels []Deletion
	for _, key := range keys {
		d, err := deleteConfirmed(ctx, objects, inc.Body.Bucket, key)
		if err != nil {
			return 0, nil, err
		}
		dels = append(dels, d)
	}
	if err := store.SaveFenced(ctx, lease, inc.Erased(ErasedMarker)); err != nil {
		return 0, nil, err
	}
	return 1, dels, nil
}

// deleteConfirmed deletes every version of an object and proves that none
// is left (a delete without a version id would leave the data behind as
// a noncurrent version).
func deleteConfirmed(ctx context.Context, objects Deleter, bucket, key string) (Deletion, error) {
	ids, err := objects.Erase(ctx, bucket, key)
	if err != nil {
		return Deletion{}, err
	}
	left, err := objects.Versions(ctx, bucket, key)
	if err != nil {
		return Deletion{}, err
	}
	if len(left) > 0 {
		return Deletion{}, fmt.Errorf("s3://%s/%s still has versions %v after its erasure", bucket, key, left)
	}
	return Deletion{Bucket: bucket, Key: key, VersionIDs: nonNil(ids), ConfirmedAbsent: time.Now().UTC()}, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func isNotFound(err error) bool { return errors.Is(err, incident.ErrNotFound) }
