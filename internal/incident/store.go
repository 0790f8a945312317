package incident

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

var (
	// ErrNotFound: no incident has the id.
	ErrNotFound = errors.New("incident: not found")
	// ErrConflict: the incident changed since it was read (optimistic
	// concurrency); re-read and retry.
	ErrConflict = errors.New("incident: changed concurrently")
	// ErrUnchanged is returned by an Update function to skip the write.
	ErrUnchanged = errors.New("incident: unchanged")
)

// Store persists incidents.
type Store interface {
	// Get returns the incident (ErrNotFound if none), body and history
	// included.
	Get(ctx context.Context, id string) (Incident, error)
	// Save writes inc if the stored version still is inc.Version (0: the
	// incident must not exist yet) and returns it with the new version;
	// ErrConflict otherwise.
	Save(ctx context.Context, inc Incident) (Incident, error)
	// List returns one page of incidents matching f, newest first. Listed
	// incidents carry no inline body and no history (Get has them).
	List(ctx context.Context, f Filter) (Page, error)
}

// Recorder is a Store that records dead letters of events: the one write
// that puts an event's data on an incident (its body, a subscriber's
// answer quoted in the error) goes through SaveDeadLetter, which commits
// only while the dispatch the incident is about (its event key and topic)
// carries no erasure marker, checked in the same conditional write, so no
// copy of an event's data is made after its subject's erasure began
// (docs/architecture.md §5, guarantee 12). Upsert takes a Recorder: every
// writer of a dead letter is guarded without asking for it.
type Recorder interface {
	Store
	// SaveDeadLetter is Save (optimistic on inc.Version) guarded by the
	// erasure marker of inc's dispatch: outbox.ErrErased when it carries
	// one, and nothing is written.
	SaveDeadLetter(ctx context.Context, inc Incident) (Incident, error)
}

// Unguarded records dead letters that copy no event's data (a failed
// durable job's: the job's id, error and status) with a plain Save. A
// writer of an event's dead letter never uses it.
type Unguarded struct{ Store }

// SaveDeadLetter saves inc unguarded.
func (u Unguarded) SaveDeadLetter(ctx context.Context, inc Incident) (Incident, error) {
	return u.Save(ctx, inc)
}

// Filter selects incidents. Every set field must match.
type Filter struct {
	// Status "" matches every status.
	Status   Status `json:"status,omitempty"`
	TenantID string `json:"tenantId,omitempty"`
	Topic    string `json:"topic,omitempty"`
	// EventID, ErrorCode and Type match the incident's event id, error
	// code and event type.
	EventID   string `json:"eventId,omitempty"`
	ErrorCode string `json:"errorCode,omitempty"`
	Type      string `json:"type,omitempty"`
	// Since and Until bound lastFailedAt, when the dispatch last failed:
	// Since <= lastFailedAt < Until (zero: unbounded). Listings are newest
	// failure first, so a re-failure of an old incident is seen.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// Limit is the page size (DefaultPageSize if 0, at most MaxPageSize).
	Limit int `json:"limit,omitempty"`
	// Cursor continues a previous page, or goes back to the one before
	// ("" = first page): a Page's Cursor or Prev.
	Cursor string `json:"cursor,omitempty"`
}

// Page sizes of List.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
	maxFilterLen    = 256
)

// Validate checks the filter.
func (f Filter) Validate() error {
	if f.Status != "" && !f.Status.Valid() {
		return fmt.Errorf("status %q: want one of %v", f.Status, Statuses)
	}
	if len(f.EventID) > maxFilterLen || len(f.ErrorCode) > maxFilterLen || len(f.Type) > maxFilterLen {
		return fmt.Errorf("an event id, error code or type is at most %d bytes", maxFilterLen)
	}
	if f.Limit < 0 || f.Limit > MaxPageSize {
		return fmt.Errorf("limit %d out of range (1..%d)", f.Limit, MaxPageSize)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return fmt.Errorf("since %s must be before until %s", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))
	}
	return nil
}

// PageSize is the effective page size.
func (f Filter) PageSize() int {
	if f.Limit <= 0 {
		return DefaultPageSize
	}
	return min(f.Limit, MaxPageSize)
}

// Matches reports whether inc matches the filter (the adapter's queries
// narrow by index; this is the definition they implement).
func (f Filter) Matches(inc Incident) bool {
	switch {
	case f.Status != "" && inc.Status != f.Status,
		f.TenantID != "" && inc.TenantID != f.TenantID,
		f.Topic != "" && inc.Topic != f.Topic,
		f.EventID != "" && inc.EventID != f.EventID,
		f.ErrorCode != "" && inc.ErrorCode != f.ErrorCode,
		f.Type != "" && inc.Type != f.Type,
		!f.Since.IsZero() && inc.LastFailedAt.Before(f.Since),
		!f.Until.IsZero() && !inc.LastFailedAt.Before(f.Until):
		return false
	}
	return true
}

// Page is one page of a listing. It may be shorter than the filter's
// limit (even empty) and still have a next page: a filter that matches
// rarely reads a bounded amount per page.
type Page struct {
	Incidents []Incident `json:"incidents"`
	// Cursor fetches the next page ("next"), Prev the one before this
	// ("prev"); "" when there is none.
	Cursor string `json:"next,omitempty"`
	Prev   string `json:"prev,omitempty"`
}

// updateAttempts bounds optimistic retries of Update.
const updateAttempts = 8

// Update reads the incident, applies fn and saves it, retrying when a
// concurrent writer got there first. fn returning ErrUnchanged skips the
// write (Update returns the current incident and nil).
func Update(ctx context.Context, s Store, id string, fn func(*Incident) error) (Incident, error) {
	return update(ctx, s, id, nil, fn)
}

// UpdateFrom is Update starting from an incident the caller has just read
// (saving a read when nobody wrote meanwhile; a conflict re-reads).
func UpdateFrom(ctx context.Context, s Store, read Incident, fn func(*Incident) error) (Incident, error) {
	return update(ctx, s, read.ID, &read, fn)
}

func update(ctx context.Context, s Store, id string, read *Incident, fn func(*Incident) error) (Incident, error) {
	for attempt := 1; ; attempt++ {
		var inc Incident
		if read != nil && attempt == 1 {
			inc = *read
			inc.History = slices.Clone(read.History)
			inc.MessageIDs = slices.Clone(read.MessageIDs)
		} else {
			var err error
			if inc, err = s.Get(ctx, id); err != nil {
				return Incident{}, err
			}
		}
		if err := fn(&inc); err != nil {
			if errors.Is(err, ErrUnchanged) {
				return inc, nil
			}
			return inc, err
		}
		saved, err := s.Save(ctx, inc)
		if errors.Is(err, ErrConflict) && attempt < updateAttempts {
			continue
		}
		return saved, err
	}
}

// Upsert records a dead letter: it opens the incident or reopens the
// existing one (see Record), retrying on concurrent writes. changed is false
// when the dead letter had been recorded already. The write is the
// Recorder's guarded one: outbox.ErrErased when the dead letter's event was
// erased (nothing is written; the caller drops the dead letter: objects it
// kept for it are under the incident's prefix, ObjectPrefix, which the
// erasure deletes after the writers that may still hold the event's data
// are done).
func Upsert(ctx context.Context, s Recorder, dl DeadLetter, now time.Time) (inc Incident, changed bool, err error) {
	id := dl.IncidentID()
	for attempt := 1; ; attempt++ {
		var existing *Incident
		cur, err := s.Get(ctx, id)
		switch {
		case err == nil:
			existing = &cur
		case !errors.Is(err, ErrNotFound):
			return Incident{}, false, err
		}
		next, changed := Record(existing, dl, now)
		if !changed {
			return next, false, nil
		}
		saved, err := s.SaveDeadLetter(ctx, next)
		if errors.Is(err, ErrConflict) && attempt < updateAttempts {
			continue
		}
		return saved, err == nil, err
	}
}

// ReopenStuck moves a stuck replay (see Incident.Stuck) back to open with
// a note, so it shows up for operators again; changed is false when the
// incident is no longer stuck.
func ReopenStuck(ctx context.Context, s Store, id string, now time.Time, after time.Duration) (inc Incident, changed bool, err error) {
	inc, err = Update(ctx, s, id, func(cur *Incident) error {
		changed = false
		if !cur.Stuck(now, after) {
			return ErrUnchanged
		}
		changed = true
		return cur.Move(StatusOpen, ActorSweeper, fmt.Sprintf("replay not confirmed within %s of %s: reopened (the replayed message may never have been sent; it still resolves the incident if it succeeds)", after, cur.ReplayedAt.UTC().Format(time.RFC3339)), now)
	})
	return inc, changed && err == nil, err
}

// Transition moves an incident as an operator or the replay engine asks
// (Move), retrying on concurrent writes.
func Transition(ctx context.Context, s Store, id string, to Status, by, note string, at time.Time) (Incident, error) {
	return Update(ctx, s, id, func(inc *Incident) error { return inc.Move(to, by, note, at) })
}

// ResolveReplay marks an incident resolved by a successful replay: a
// retrying one, and also one a stuck-replay check reopened meanwhile (open
// or triaged, replayed, and not dead-lettered again since the replay), so
// a slow replay still resolves its incident. Any other incident is left
// alone: a late or duplicate attestation is not an error.
func ResolveReplay(ctx context.Context, s Store, id string, at time.Time) error {
	_, err := Update(ctx, s, id, func(inc *Incident) error {
		switch {
		case inc.Status == StatusRetrying:
		case (inc.Status == StatusOpen || inc.Status == StatusTriaged) && !inc.ReplayedAt.IsZero() && inc.LastFailedAt.Before(inc.ReplayedAt):
		default:
			return ErrUnchanged
		}
		inc.move(StatusResolved, ActorReplay, "replayed message processed", at)
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}
