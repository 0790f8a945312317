package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/siteswarm/eventplatform/internal/identity"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/pagecursor"
	"github.com/siteswarm/eventplatform/internal/ledger"

	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/subject"
)

// Service replays incidents; build it with New.
type Service struct {
	cfg Config
	d   Deps
}

// SelectPage is one page of a selection.
type SelectPage struct {
	IncidentIDs []string `json:"incidentIds"`
	// Cursor continues the selection; "" when Done (always present, so a
	// state machine can pass it on without a missing-path error).
	Cursor string `json:"cursor"`
	Done   bool   `json:"done"`
	// Selected counts the incidents selected so far, this page included.
	Selected  int  `json:"selected"`
	Truncated bool `json:"truncated"`
}

// DefaultPageSize is a selection page's size (a Step Functions Map
// iteration's item count).
const DefaultPageSize = 100

type selectCursor struct {
	Store    string `json:"c,omitempty"`
	Selected int    `json:"n"`
}

// Select returns the next page of incident ids a request selects: the
// explicit ids (one page), or the filter's matches, newest first, until the
// request's limit.
func (s *Service) Select(ctx context.Context, r Request, cursor string, pageSize int) (SelectPage, error) {
	sel, err := r.validate(s.d.Now())
	if err != nil {
		return SelectPage{}, err
	}
	if len(sel.IncidentIDs) > 0 {
		if cursor != "" {
			return SelectPage{IncidentIDs: []string{}, Done: true, Selected: len(sel.IncidentIDs)}, nil
		}
		return SelectPage{IncidentIDs: sel.IncidentIDs, Done: true, Selected: len(sel.IncidentIDs)}, nil
	}
	var cur selectCursor
	if cursor != "" {
		if err := pagecursor.Decode(cursor, &cur); err != nil {
			return SelectPage{}, BadRequest("invalid cursor")
		}
	}
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	remaining := sel.Limit - cur.Selected
	page := SelectPage{IncidentIDs: []string{}, Selected: cur.Selected}
	if remaining <= 0 {
		page.Done = true
		return page, nil
	}
	res, err := s.d.Incidents.List(ctx, incident.Filter{
		Status: sel.Status, TenantID: sel.TenantID, Topic: sel.Topic, ErrorCode: sel.ErrorCode, Type: sel.Type, Since: sel.since, Until: sel.until,
		Limit: min(pageSize, remaining, incident.MaxPageSize), Cursor: cur.Store,
	})
	if err != nil {
		return SelectPage{}, fmt.Errorf("replay: select: %w", err)
	}
	for _, inc := range res.Incidents {
		page.IncidentIDs = append(page.IncidentIDs, inc.ID)
	}
	page.Selected += len(page.IncidentIDs)
	switch {
	case res.Cursor == "":
		page.Done = true
	case page.Selected >= sel.Limit:
		// The limit cut the selection short; say so if anything else
		// matches.
		more, err := s.d.Incidents.List(ctx, incident.Filter{
			Status: sel.Status, TenantID: sel.TenantID, Topic: sel.Topic, ErrorCode: sel.ErrorCode, Type: sel.Type, Since: sel.since, Until: sel.until,
			Limit: 1, Cursor: res.Cursor,
		})
		if err != nil {
			return SelectPage{}, fmt.Errorf("replay: select: %w", err)
		}
		page.Done, page.Truncated = true, len(more.Incidents) > 0
	default:
		if page.Cursor, err = pagecursor.Encode(selectCursor{Store: res.Cursor, Selected: page.Selected}); err != nil {
			return SelectPage{}, err
		}
	}
	return page, nil
}

// ReplayOne replays one incident under the request's options (force, dry
// run, actor, note, token) and constraints (a tenant or topic the incident
// must belong to). Problems with the incident are outcomes, not errors.
//
// Order matters so that a replay that dies midway never hides the event:
// the incident moves to retrying first (a stuck replay is reopened by the
// sweeper after incident.DefaultStuckAfter), the dispatch row is reset
// before the send only when the consumer would otherwise skip the message
// (a completed row, forced) and after it otherwise, and an event past its
// retention gets its ledger record and row back before the send. A request
// token already recorded on the incident marks a retried request: it never
// starts a second replay (a forced retry would otherwise run a side effect
// twice), it only completes the first.
func (s *Service) ReplayOne(ctx context.Context, r Request, id string) Outcome {
	o := s.replayOne(ctx, r, id)
	// A page of outcomes crosses the state machine in one state (256 KB).
	o.Error, o.Detail = clip(o.Error), clip(o.Detail)
	return o
}

func (s *Service) replayOne(ctx context.Context, r Request, id string) Outcome {
	now := s.d.Now()
	out := Outcome{IncidentID: id}
	skip := func(reason, detail string) Outcome {
		out.Result, out.Reason, out.Detail = ResultSkipped, reason, detail
		return out
	}
	fail := func(err error) Outcome {
		out.Result, out.Error = ResultError, err.Error()
		return out
	}
	actor := r.Actor
	if actor == "" {
		actor = incident.ActorReplay
	}

	inc, err := s.d.Incidents.Get(ctx, id)
	if errors.Is(err, incident.ErrNotFound) {
		return skip(SkipNotFound, "no incident has this id")
	}
	if err != nil {
		return fail(err)
	}
	out.Incident = BriefOf(inc)
	log := s.d.Log.With("incidentId", id, "eventId", inc.EventID, "tenantId", inc.TenantID, "topic", inc.Topic)
	switch {
	case r.TenantID != "" && inc.TenantID != r.TenantID:
		return skip(SkipTenantMismatch, fmt.Sprintf("the incident belongs to another tenant, not %s", r.TenantID))
	case r.Topic != "" && inc.Topic != r.Topic:
		return skip(SkipTopicMismatch, fmt.Sprintf("the incident is on %s, not %s", inc.Topic, r.Topic))
	case inc.Raw:
		return skip(SkipUnparseable, "the dead letter's body is not a platform envelope; it cannot be replayed (ignore it once handled)")
	case inc.IsErased(ledger.ErasedPayload):
		return skip(SkipErased, "the event's subject was erased; it cannot be replayed")
	}
	retried := r.Token != "" && inc.ReplayToken == r.Token
	if retried && inc.Status != incident.StatusRetrying {
		// This request's replay ran its course already (resolved, or
		// dead-lettered again): a retried step must not start another.
		out.Result = ResultReplayed
		return out
	}
	if !retried {
		if reason, detail := replayable(inc, r.Force); reason != "" {
			return skip(reason, detail)
		}
	}
	if strings.HasPrefix(inc.Topic, jobs.IncidentTopicPrefix) {
		return s.replayJob(ctx, r, inc, retried, actor, now, out)
	}
	if _, ok := s.d.Topology.Topic(inc.Topic); !ok {
		return skip(SkipUnknownTopic, fmt.Sprintf("topic %q is not in the topology", inc.Topic))
	}
	ev, err := s.canonical(ctx, inc)
	if err != nil {
		return fail(err)
	}
	ref := outbox.RowRef{Key: inc.Key(), Topic: inc.Topic}
	row, exists, err := s.d.Events.Row(ctx, ref)
	if err != nil {
		return fail(err)
	}
	switch {
	case exists && !row.ErasedAt.IsZero():
		// Erased after the incident was read (or an incident the erasure
		// has not reached yet): the row's marker decides.
		return skip(SkipErased, "the event's subject was erased; it cannot be replayed")
	case exists && row.Status == outbox.StatusProcessing && row.Leased(now):
		return skip(SkipInProgress, "a consumer is processing this dispatch right now; retry after it finishes")
	case exists && row.Status == outbox.StatusProcessing && !r.Force:
		// The lease ended without an outcome: the handler may have run
		// and its completion still be on its way (carried in a copy of
		// the message, or settled by the sweeper), or the message comes
		// back by itself. A re-send now would reset the row under that
		// completion and run the side effect again.
		return skip(SkipInProgress, "a consumer ran this dispatch and its outcome is not recorded yet (its completion may be on its way, or the sweeper settles it); retry later, or use force to run it again")
	case retried && exists && row.Status == outbox.StatusCompleted:
		// This request's replay was delivered already.
		out.Result = ResultReplayed
		return out
	case exists && row.Status == outbox.StatusCompleted && !r.Force:
		return skip(SkipCompleted, "the consumer already completed this dispatch; use force to run it again")
	}
	if r.DryRun {
		out.Result = ResultWouldReplay
		return out
	}
	ev, err = s.withPayload(ctx, ev)
	if err != nil {
		return fail(err)
	}

	moved := inc
	if !retried {
		// 1. → retrying, conditional on the incident being unchanged since
		// read (optimistic version).
		moved, err = incident.UpdateFrom(ctx, s.d.Incidents, inc, func(cur *incident.Incident) error {
			if cur.IsErased(ledger.ErasedPayload) {
				return errErasedIncident // redacted since it was read
			}
			return cur.StartReplay(actor, r.Note, r.Token, now, r.Force)
		})
		if errors.Is(err, errErasedIncident) {
			return skip(SkipErased, "the event's subject was erased; it cannot be replayed")
		}
		if errors.Is(err, incident.ErrTransition) {
			return skip(SkipStatus, err.Error())
		}
		if err != nil {
			return fail(err)
		}
		out.Incident = BriefOf(moved)
	}
	// 2. Make the dispatch row take the message: restored when it is gone
	// (with its ledger record when that is gone too), reset from
	// completed.
	resetAfter := false
	switch {
	case !exists:
		err := s.restore(ctx, ev, inc, now)
		if errors.Is(err, outbox.ErrErased) {
			// The erasure redacted the incident (or marked the event)
			// after it was read: the guarded restore wrote nothing, and
			// nothing is sent.
			s.revertErased(ctx, log, id, actor)
			return skip(SkipErased, "the event's subject was erased; it cannot be replayed")
		}
		if err != nil {
			return fail(s.revert(ctx, log, id, actor, fmt.Errorf("restore the event past its retention: %w", err)))
		}
	case row.Status == outbox.StatusCompleted:
		if err := s.d.Events.ResetForReplay(ctx, row, now); err != nil {
			return fail(s.revert(ctx, log, id, actor, fmt.Errorf("reset dispatch row: %w", err)))
		}
	default:
		resetAfter = true
	}
	// 3. Re-send the canonical envelope with replayOf.
	msg, err := s.message(ctx, ev, moved)
	if err == nil {
		err = s.d.Sender.Send(ctx, msg)
	}
	if err != nil {
		return fail(s.revert(ctx, log, id, actor, fmt.Errorf("send: %w", err)))
	}
	// 4. Show the replay in flight. A consumer that took the row already
	// moved it on, which is what the condition is for.
	if resetAfter {
		if err := s.d.Events.ResetForReplay(ctx, row, now); err != nil && !errors.Is(err, outbox.ErrRowChanged) {
			log.WarnContext(ctx, "replay: sent; the dispatch row could not be marked enqueued (views lag until the consumer claims it)", "error", err)
		}
	}
	log.InfoContext(ctx, "replay: incident re-sent", "actor", actor, "force", r.Force, "replayCount", moved.ReplayCount, "retriedRequest", retried)
	out.Result = ResultReplayed
	return out
}

// errErasedIncident: the incident was redacted by a subject erasure after
// the replay read it.
var errErasedIncident = errors.New("replay: the incident was erased")

// restore writes back an event's missing dispatch row, and its ledger
// record when that expired too, from the incident's canonical envelope;
// outbox.ErrErased (nothing written) once the incident is erased. A large
// payload's claim-check object is stored before the guarded write; when
// that is refused the erasure deletes the object (the event's claim-check
// prefix, on its pass over the incidents after its writers' window, which
// outlasts a replay's invocation).
func (s *Service) restore(ctx context.Context, ev envelope.Event, inc incident.Incident, now time.Time) error {
	key := inc.Key()
	rec, _, err := s.d.Events.Load(ctx, key)
	ledgerExists := err == nil
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		return err
	}
	if !ledgerExists {
		producer, _ := s.d.Topology.Producer(ev.Source)
		stored, err := s.claimChecked(ctx, ev)
		if err != nil {
			return err
		}
		rec = ledger.Record{
			Key: key, Event: stored, Topics: s.d.Topology.Route(ev.Type), PayloadHash: identity.Of(producer, ev),
			OrderingKey: subject.OrderingKey(producer, ev),
			Status:      ledger.StatusReceived, CreatedAt: now, ExpiresAt: now.Add(s.cfg.Retention),
		}
	}
	tp, _ := s.d.Topology.Topic(inc.Topic)
	row := outbox.Row{
		Key: key, EventID: inc.EventID, Topic: inc.Topic, TenantID: inc.TenantID, Type: ev.Type,
		Status: outbox.StatusEnqueued, MaxAttempts: tp.MaxOutboxAttempts, NextRetryAt: now, CreatedAt: now, UpdatedAt: now,
	}
	return s.d.Restorer.Restore(ctx, rec, row, ledgerExists, inc.ID)
}

// replayable checks the incident's status against the request's force.
func replayable(inc incident.Incident, force bool) (reason, detail string) {
	switch {
	case slices.Contains(incident.Replayable, inc.Status):
		return "", ""
	case slices.Contains(incident.ForceReplayable, inc.Status) && force:
		return "", ""
	case slices.Contains(incident.ForceReplayable, inc.Status):
		return SkipStatus, fmt.Sprintf("the incident is %s; use force to replay it", inc.Status)
	}
	return SkipStatus, fmt.Sprintf("the incident is %s", inc.Status)
}

// revert puts an incident whose replay could not be sent back to open, so
// it is not left retrying for a message that never left, and returns cause.
func (s *Service) revert(ctx context.Context, log *slog.Logger, id, actor string, cause error) error {
	_, err := incident.Update(ctx, s.d.Incidents, id, func(cur *incident.Incident) error {
		if cur.Status != incident.StatusRetrying {
			return incident.ErrUnchanged
		}
		return cur.Move(incident.StatusOpen, actor, "replay failed: "+cause.Error(), s.d.Now())
	})
	if err != nil {
		log.ErrorContext(ctx, "replay: failed, and the incident could not be reopened (it stays retrying; replay it with force)", "cause", cause, "error", err)
		return fmt.Errorf("%w (and reopening the incident failed: %v)", cause, err)
	}
	log.WarnContext(ctx, "replay: failed; incident reopened", "error", cause)
	return cause
}

// revertErased puts an incident the erasure redacted during its replay
// back to open. Its note is the erasure's text: an erased incident keeps
// no text that may be about the subject, and stays erased (IsErased).
func (s *Service) revertErased(ctx context.Context, log *slog.Logger, id, actor string) {
	_, err := incident.Update(ctx, s.d.Incidents, id, func(cur *incident.Incident) error {
		if cur.Status != incident.StatusRetrying {
			return incident.ErrUnchanged
		}
		return cur.Move(incident.StatusOpen, actor, incident.ErasedText, s.d.Now())
	})
	if err != nil {
		log.ErrorContext(ctx, "replay: stopped by the subject's erasure, and the incident could not be reopened (it stays retrying)", "error", err)
		return
	}
	log.InfoContext(ctx, "replay: stopped by the subject's erasure; nothing restored or sent")
}

// canonical loads and checks the incident's envelope.
func (s *Service) canonical(ctx context.Context, inc incident.Incident) (envelope.Event, error) {
	body, err := s.d.Bodies.Load(ctx, inc.Body)
	if err != nil {
		return envelope.Event{}, err
	}
	ev, perr := envelope.ParseMessage(body)
	if perr != nil {
		return envelope.Event{}, fmt.Errorf("replay: stored body of %s does not parse: %v", inc.ID, perr)
	}
	if ev.ID != inc.EventID || ev.TenantID != inc.TenantID {
		return envelope.Event{}, fmt.Errorf("replay: stored body of %s is event %s of tenant %s, not %s of %s", inc.ID, ev.ID, ev.TenantID, inc.EventID, inc.TenantID)
	}
	return ev, nil
}

// withPayload returns the envelope with its payload inline: a
// claim-checked one is loaded (the incident's copy or, if the archiver
// could not copy it, the original claim-check object).
func (s *Service) withPayload(ctx context.Context, ev envelope.Event) (envelope.Event, error) {
	if ev.PayloadRef == nil {
		return ev, nil
	}
	data, err := claimcheck.Load(ctx, s.d.ClaimCheck.Store, *ev.PayloadRef)
	if err != nil {
		return ev, fmt.Errorf("replay: the claim-checked payload is gone: %w", err)
	}
	ev.Payload, ev.PayloadRef = data, nil
	return ev, nil
}

// claimChecked applies the claim-check threshold exactly as ingest does
// (the deterministic key makes it the object ingest wrote, recreated if its
// lifecycle removed it; consumers only ever read claim-check keys).
func (s *Service) claimChecked(ctx context.Context, ev envelope.Event) (envelope.Event, error) {
	if !s.d.ClaimCheck.Needed(len(ev.Payload)) {
		return ev, nil
	}
	ref, err := s.d.ClaimCheck.Put(ctx, ev.TenantID, ev.ID, ev.Payload)
	if err != nil {
		return ev, err
	}
	ev.Payload, ev.PayloadRef = nil, ref
	return ev, nil
}

// message builds the replayed queue message: the canonical envelope with
// the exact payload bytes (claim-checked again above the threshold), with
// replayOf set.
func (s *Service) message(ctx context.Context, ev envelope.Event, inc incident.Incident) (outbox.Message, error) {
	// The ordering key from the inline payload, as ingest derived it: a
	// replay into a FIFO topic joins its entity's group.
	producer, _ := s.d.Topology.Producer(ev.Source)
	key := subject.OrderingKey(producer, ev)
	ev, err := s.claimChecked(ctx, ev)
	if err != nil {
		return outbox.Message{}, err
	}
	body, err := ev.Marshal()
	if err != nil {
		return outbox.Message{}, err
	}
	m := outbox.Message{
		Topic: inc.Topic, Key: inc.Key(), EventID: ev.ID, TenantID: ev.TenantID, Type: ev.Type, OrderingKey: key,
		Body: body, ReplayOf: inc.ID,
		// One dedup id per replay started: a FIFO queue drops a repeated
		// send of the same replay, never the next replay.
		DedupID: fmt.Sprintf("replay:%s:%d", inc.ID, inc.ReplayCount),
	}
	if s.d.TraceHeader != nil {
		m.TraceHeader = s.d.TraceHeader(ctx)
	}
	return m, nil
}

// Replay runs a whole request in-process: every selection page, each
// incident replayed with bounded concurrency. The Step Functions state
// machine does the same with select / replay-one / summarize.
func (s *Service) Replay(ctx context.Context, r Request) (Summary, error) {
	return s.ReplayWithProgress(ctx, r, nil)
}

// ReplayWithProgress is Replay reporting each outcome as it happens.
func (s *Service) ReplayWithProgress(ctx context.Context, r Request, progress func(Outcome)) (Summary, error) {
	if r.Limit > MaxLimit && !r.DryRun {
		return NewSummary(false), &RequestError{Code: CodeTooLargeForOneCall, Message: fmt.Sprintf(
			"a replay of more than %d incidents runs page by page: start the replay state machine (evp dlq replay does)", MaxLimit)}
	}
	sum := NewSummary(r.DryRun)
	cursor := ""
	for {
		page, err := s.Select(ctx, r, cursor, DefaultPageSize)
		if err != nil {
			return sum, err
		}
		outcomes := make([]Outcome, len(page.IncidentIDs))
		sem := make(chan struct{}, s.cfg.Concurrency)
		var wg sync.WaitGroup
		for i, id := range page.IncidentIDs {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				outcomes[i] = s.ReplayOne(ctx, r, id)
				if progress != nil {
					progress(outcomes[i])
				}
			})
		}
		wg.Wait()
		for _, o := range outcomes {
			sum.Add(o)
		}
		sum.Selected = page.Selected
		sum.Truncated = page.Truncated
		if page.Done {
			break
		}
		cursor = page.Cursor
	}
	slices.Sort(sum.Replayed)
	return sum, nil
}

// Summarize folds one page of replay-one outcomes into running totals (the
// state machine's summary step).
func Summarize(totals *Summary, selected int, outcomes []Outcome, dryRun bool) Summary {
	sum := NewSummary(dryRun)
	if totals != nil {
		sum.Merge(*totals)
		sum.DryRun = totals.DryRun || dryRun
	}
	for _, o := range outcomes {
		sum.Add(o)
	}
	if selected > sum.Selected {
		sum.Selected = selected
	}
	return sum
}

// replayJob replays a failed durable job's incident: the job restarts
// under a new generation from its last checkpoint, and resolves the
// incident when it completes.
func (s *Service) replayJob(ctx context.Context, r Request, inc incident.Incident, retried bool, actor string, now time.Time, out Outcome) Outcome {
	if s.d.Jobs == nil {
		out.Result, out.Reason, out.Detail = ResultSkipped, SkipUnknownTopic, "this function has no job engine configured"
		return out
	}
	if r.DryRun {
		out.Result = ResultWouldReplay
		return out
	}
	if !retried {
		moved, err := incident.UpdateFrom(ctx, s.d.Incidents, inc, func(cur *incident.Incident) error {
			return cur.StartReplay(actor, r.Note, r.Token, now, r.Force)
		})
		if errors.Is(err, incident.ErrTransition) {
			out.Result, out.Reason, out.Detail = ResultSkipped, SkipStatus, err.Error()
			return out
		}
		if err != nil {
			out.Result, out.Error = ResultError, err.Error()
			return out
		}
		out.Incident = BriefOf(moved)
	}
	if err := s.d.Jobs.RestartJob(ctx, inc.EventID, "replayed from incident "+inc.ID+" by "+actor); err != nil {
		out.Result, out.Error = ResultError, s.revert(ctx, s.d.Log, inc.ID, actor, fmt.Errorf("restart job %s: %w", inc.EventID, err)).Error()
		return out
	}
	out.Result = ResultReplayed
	return out
}
