package incident

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/truncate"
)

// ErrTransition is wrapped by every refused status change.
var ErrTransition = errors.New("incident: transition not allowed")

// allowed is the operator and replay lifecycle (docs/operations.md). A dead letter
// arriving again reopens an incident from any status (see Record); forced
// replays are in ForceReplayable.
var allowed = map[Status][]Status{
	StatusOpen:     {StatusTriaged, StatusRetrying, StatusIgnored},
	StatusTriaged:  {StatusRetrying, StatusIgnored},
	StatusRetrying: {StatusResolved, StatusOpen},
}

// Replayable statuses: a replay moves these to retrying without force.
var Replayable = []Status{StatusOpen, StatusTriaged}

// ForceReplayable statuses need force: a resolved or ignored incident, or
// one stuck retrying (its replay message was lost or never attested).
var ForceReplayable = []Status{StatusResolved, StatusIgnored, StatusRetrying}

// CanMove reports whether the lifecycle allows from → to.
func CanMove(from, to Status) bool { return slices.Contains(allowed[from], to) }

// MaxHistory bounds the history kept on an incident (the first entry, the
// opening, is always kept) so a long-lived incident cannot outgrow
// DynamoDB's item size limit.
const MaxHistory = 50

// MaxNoteLen bounds an operator's note.
const MaxNoteLen = 1024

// Move applies an operator or replay transition: it checks the lifecycle,
// records who, when and why, and sets the status's timestamps.
func (inc *Incident) Move(to Status, by, note string, at time.Time) error {
	if !CanMove(inc.Status, to) {
		return fmt.Errorf("%w: %s is %s; it can move to %v", ErrTransition, inc.ID, inc.Status, allowed[inc.Status])
	}
	inc.move(to, by, note, at)
	return nil
}

// StartReplay moves the incident to retrying for a replay: from open or
// triaged, or with force from resolved, ignored or retrying. token names
// the replay request (see ReplayToken).
func (inc *Incident) StartReplay(by, note, token string, at time.Time, force bool) error {
	switch {
	case slices.Contains(Replayable, inc.Status):
	case force && slices.Contains(ForceReplayable, inc.Status):
	case slices.Contains(ForceReplayable, inc.Status):
		return fmt.Errorf("%w: %s is %s; replaying it needs force", ErrTransition, inc.ID, inc.Status)
	default:
		return fmt.Errorf("%w: %s is %s", ErrTransition, inc.ID, inc.Status)
	}
	inc.move(StatusRetrying, by, note, at)
	inc.ReplayedAt = at
	inc.ReplayCount++
	inc.ReplayToken = token
	return nil
}

func (inc *Incident) move(to Status, by, note string, at time.Time) {
	inc.appendHistory(Change{From: inc.Status, To: to, By: by, At: at, Note: truncate.String(note, MaxNoteLen)})
	inc.Status = to
	inc.UpdatedAt = at
	if to == StatusResolved {
		inc.ResolvedAt, inc.ResolvedBy = at, by
	}
}

func (inc *Incident) appendHistory(c Change) {
	inc.History = append(inc.History, c)
	if n := len(inc.History); n > MaxHistory {
		// Keep the opening entry and the most recent ones.
		inc.History = append(inc.History[:1:1], inc.History[n-MaxHistory+1:]...)
	}
}

// DeadLetter is one failed dispatch arriving at the incident ledger: a
// message drained from a topic's DLQ, or a dispatch the sweeper abandoned.
type DeadLetter struct {
	// EventKey is the event's storage key ("" for a raw dead letter:
	// EventID then stands in).
	EventKey string
	EventID  string
	TenantID string
	Topic    string
	Type     string
	Source   string
	// Subject and Owner are the subject identifiers the event names
	// (subject.Names): an erasure finds the incident by them, also after
	// the event's ledger item expired.
	Subject string
	Owner   string
	// SourceQueue is the DLQ's ARN, or SourceOutbox.
	SourceQueue string
	// MessageID is the SQS message id of the dead letter ("" for the
	// sweeper), used to ignore a redelivered dead letter.
	MessageID    string
	ErrorCode    string
	ErrorMessage string
	// ErrorSummary is ErrorMessage without a subscriber's answer, sent
	// by the consumer (outbox.AttrErrorSummary).
	ErrorSummary string
	ErrorDetail  string
	Body         Body
	Raw          bool
	// FailedAt is when the dispatch failed (the consumer's failedAt, or
	// now).
	FailedAt time.Time
	// By is the recording actor (ActorArchiver, ActorSweeper).
	By string
}

// Key is the storage key of the dead letter's event.
func (dl DeadLetter) Key() string {
	if dl.EventKey != "" {
		return dl.EventKey
	}
	return dl.EventID
}

// IncidentID is the incident the dead letter belongs to: one per (event
// key, topic). Every path that records or looks up a dead letter's incident
// uses it, so a scoped key is never confused with the bare id.
func (dl DeadLetter) IncidentID() string { return ID(dl.Key(), dl.Topic) }

// Limits of stored error text.
const (
	MaxErrorMessageLen = 2048
	MaxErrorDetailLen  = 8192
	// maxMessageIDs is how many recent dead-letter message ids are kept
	// for redelivery detection.
	maxMessageIDs = 10
)

// Record applies a dead letter to the incident it belongs to: a new
// incident opens (RetryCount 1); an existing one counts the failure, takes
// the latest error and body and goes back to open from whatever status it
// was in (docs/architecture.md §5, guarantee 6: no duplicate incident). A dead letter already recorded
// (same SQS message id, redelivered) changes nothing: Record reports
// changed = false.
func Record(existing *Incident, dl DeadLetter, now time.Time) (inc Incident, changed bool) {
	if existing != nil && dl.MessageID != "" && slices.Contains(existing.MessageIDs, dl.MessageID) {
		return *existing, false
	}
	failedAt := dl.FailedAt
	if failedAt.IsZero() {
		failedAt = now
	}
	note := dl.ErrorCode + ": " + dl.ErrorMessage
	if existing == nil {
		inc = Incident{
			ID: dl.IncidentID(), EventID: dl.EventID, EventKey: dl.EventKey, TenantID: dl.TenantID, Topic: dl.Topic,
			Status: StatusOpen, CreatedAt: now,
		}
		inc.appendHistory(Change{To: StatusOpen, By: dl.By, At: now, Note: truncate.String(note, MaxNoteLen)})
	} else {
		inc = *existing
		inc.History = slices.Clone(existing.History)
		inc.MessageIDs = slices.Clone(existing.MessageIDs)
		inc.appendHistory(Change{From: inc.Status, To: StatusOpen, By: dl.By, At: now, Note: truncate.String(note, MaxNoteLen)})
		inc.Status = StatusOpen
	}
	if inc.TenantID == "" || inc.TenantID == UnknownTenant {
		inc.TenantID = dl.TenantID
	}
	if inc.TenantID == "" {
		inc.TenantID = UnknownTenant
	}
	inc.RetryCount++
	inc.Type, inc.Source, inc.SourceQueue = dl.Type, dl.Source, dl.SourceQueue
	if dl.Subject != "" || dl.Owner != "" {
		inc.Subject, inc.Owner = dl.Subject, dl.Owner
	}
	inc.ErrorCode = dl.ErrorCode
	inc.ErrorMessage = truncate.String(dl.ErrorMessage, MaxErrorMessageLen)
	inc.ErrorSummary = truncate.String(dl.ErrorSummary, MaxErrorMessageLen)
	inc.ErrorDetail = truncate.String(dl.ErrorDetail, MaxErrorDetailLen)
	inc.Body, inc.Raw = dl.Body, dl.Raw
	inc.LastFailedAt = failedAt
	inc.UpdatedAt = now
	if dl.MessageID != "" {
		inc.MessageIDs = append(inc.MessageIDs, dl.MessageID)
		if n := len(inc.MessageIDs); n > maxMessageIDs {
			inc.MessageIDs = inc.MessageIDs[n-maxMessageIDs:]
		}
	}
	return inc, true
}
