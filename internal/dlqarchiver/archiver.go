package dlqarchiver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/subject"
)

// Rows is the Events table as the archiver uses it.
type Rows interface {
	// Row reads one dispatch row; false when it does not exist.
	Row(ctx context.Context, r outbox.RowRef) (outbox.Row, bool, error)
	// MarkDLQ moves a dispatch row to dlq; false when the row is missing,
	// completed, or held by a live consumer lease.
	MarkDLQ(ctx context.Context, r outbox.RowRef, now time.Time) (bool, error)
}

// Erasures are the subject erasures, as the archiver asks about them.
type Erasures interface {
	// ErasedSince reports whether an erasure of one of a tenant's subject
	// identifiers (empty ones aside) ran at or after since: one started
	// then, still running, or finished since. An erasure is known as long
	// as its job is kept (jobs.DefaultRetention, 30 days, beyond the
	// DLQs' 14-day retention).
	ErasedSince(ctx context.Context, tenant string, names []string, since time.Time) (bool, error)
}

// Archiver handles batches from the topic DLQs.
type Archiver struct {
	cfg Config
	d   Deps
}

// Handle archives a batch and reports the messages to retry (partial batch
// failure): a message is acknowledged only after its incident is written.
func (a *Archiver) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var (
		mu   sync.Mutex
		resp = events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
		wg   sync.WaitGroup
		sem  = make(chan struct{}, a.cfg.Concurrency)
	)
	for _, rec := range ev.Records {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := a.Archive(ctx, rec); err != nil {
				a.d.Log.ErrorContext(ctx, "archiver: dead letter not archived; it will be retried",
					"messageId", rec.MessageId, "sourceQueue", rec.EventSourceARN, "error", err)
				mu.Lock()
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return resp, nil
}

// Archive records one dead letter. An error means nothing was
// acknowledged: the message must be retried.
func (a *Archiver) Archive(ctx context.Context, msg events.SQSMessage) error {
	now := a.d.Now()
	dl, err := a.deadLetter(ctx, msg, now)
	if errors.Is(err, errErased) {
		// Acknowledged: nothing of it is kept.
		a.d.Log.InfoContext(ctx, "archiver: dead letter of an erased event dropped", "eventId", dl.EventID, "tenantId", dl.TenantID, "topic", dl.Topic, "messageId", msg.MessageId)
		return nil
	}
	if err != nil {
		return err
	}
	log := a.d.Log.With("eventId", dl.EventID, "tenantId", dl.TenantID, "topic", dl.Topic, "messageId", msg.MessageId)
	inc, changed, err := incident.Upsert(ctx, a.d.Incidents, dl, now)
	if errors.Is(err, outbox.ErrErased) {
		// Erased after the row was read above: the guarded write refused
		// the incident. A body or payload copy kept for it lies under the
		// incident's prefix, which the erasure deletes once every writer
		// that may have read the event before its marker is done
		// (jobkinds.WriterWindow).
		log.InfoContext(ctx, "archiver: dead letter of an erased event dropped (erased while it was archived)")
		return nil
	}
	if err != nil {
		return fmt.Errorf("archiver: record incident: %w", err)
	}
	if !dl.Raw {
		// Also on a redelivery (changed false): the previous delivery may
		// have written the incident and then failed here.
		if _, err := a.d.Rows.MarkDLQ(ctx, outbox.RowRef{Key: dl.Key(), Topic: dl.Topic}, now); err != nil {
			return fmt.Errorf("archiver: mark dispatch dlq: %w", err)
		}
	}
	if !changed {
		log.InfoContext(ctx, "archiver: dead letter already archived", "incidentId", inc.ID)
		return nil
	}
	log.WarnContext(ctx, "archiver: incident open", "incidentId", inc.ID, "retryCount", inc.RetryCount,
		"errorCode", inc.ErrorCode, "raw", inc.Raw, "bodyInS3", inc.Body.External())
	if a.d.Metrics != nil {
		a.d.Metrics.Emit(map[string]string{"Topic": dl.Topic}, metric.Metric{Name: MetricIncidentsOpened, Unit: metric.Count, Value: 1})
	}
	if a.d.Alerts != nil {
		// Best effort: the incident is durable and the IncidentsOpened
		// metric alarms independently, so a failed alert must not make the
		// dead letter retry (which would not alert again anyway: the
		// incident already has the message).
		if err := a.d.Alerts.Alert(ctx, alertFor(inc)); err != nil {
			log.ErrorContext(ctx, "archiver: alert failed", "incidentId", inc.ID, "error", err)
		}
	}
	return nil
}

// errErased: the dead letter's event was erased (its row carries the
// erasure marker).
var errErased = errors.New("archiver: the event's subject was erased")

// MetricIncidentsOpened counts incidents opened or reopened, per Topic.
const MetricIncidentsOpened = "IncidentsOpened"

func (a *Archiver) deadLetter(ctx context.Context, msg events.SQSMessage, now time.Time) (incident.DeadLetter, error) {
	attr := func(name string) string {
		if v, ok := msg.MessageAttributes[name]; ok && v.StringValue != nil {
			return *v.StringValue
		}
		return ""
	}
	dl := incident.DeadLetter{
		SourceQueue: msg.EventSourceARN,
		MessageID:   msg.MessageId,
		ErrorCode:   attr(outbox.AttrErrorCode),
		// The consumer's own error text; a redriven message has none.
		ErrorMessage: attr(outbox.AttrErrorMessage),
		ErrorSummary: attr(outbox.AttrErrorSummary),
		By:           incident.ActorArchiver,
	}
	if t, err := time.Parse(time.RFC3339Nano, attr(outbox.AttrFailedAt)); err == nil {
		dl.FailedAt = t
	}
	var details []string
	claimed := attr(outbox.AttrTopic)
	dl.Topic = a.cfg.DLQTopics[msg.EventSourceARN]
	switch {
	case dl.Topic == "" && claimed != "":
		// A queue the archiver was not configured with: the attribute is
		// all there is (and the configuration wants fixing).
		dl.Topic = claimed
		details = append(details, fmt.Sprintf("source queue %s is not a known topic DLQ; topic taken from the message's attribute", msg.EventSourceARN))
	case dl.Topic == "":
		dl.Topic = "unknown"
	case claimed != "" && claimed != dl.Topic:
		details = append(details, fmt.Sprintf("misrouted: the message names topic %q but was dead-lettered from %s's DLQ; recorded on %s", claimed, dl.Topic, dl.Topic))
	}
	raw := []byte(msg.Body)

	ev, perr := envelope.ParseMessage(raw)
	if perr != nil {
		// Archived verbatim: never dropped, never replayed.
		dl.Raw = true
		dl.EventID = attr(outbox.AttrEventID)
		if dl.EventID == "" || len(dl.EventID) > envelope.MaxIDLen {
			dl.EventID = "raw-" + envelope.SHA256Hex(raw)[:32]
		}
		dl.TenantID = attr(outbox.AttrTenantID)
		dl.Type = attr(outbox.AttrType)
		if dl.ErrorCode == "" {
			dl.ErrorCode, dl.ErrorMessage = incident.CodeUnparseable, perr.Error()
		} else {
			details = append(details, "body is not a platform envelope: "+perr.Error())
		}
		dl.ErrorDetail = joinDetails(details)
		var err error
		dl.Body, err = a.d.Bodies.Keep(ctx, tenantOrUnknown(dl.TenantID), dl.IncidentID(), raw)
		return dl, err
	}

	dl.EventID, dl.TenantID, dl.Type, dl.Source = ev.ID, ev.TenantID, ev.Type, ev.Source
	names := a.names(ctx, ev)
	dl.Subject, dl.Owner = names.Subject, names.Owner
	dl.EventKey = ev.ID // sent before keys existed (ledger.LegacyKey)
	switch key := attr(outbox.AttrEventKey); {
	case ledger.Names(key, ev.TenantID, ev.ID):
		dl.EventKey = key
	case key != "":
		details = append(details, fmt.Sprintf("message attribute eventKey %q does not name the body's event; using %q", key, ev.ID))
	}
	if id := attr(outbox.AttrEventID); id != "" && id != ev.ID {
		details = append(details, fmt.Sprintf("message attribute eventId %q disagrees with the body's id", id))
	}
	// The dispatch row carries the erasure marker once the event's
	// subject was erased: a dead letter still in flight then holds the
	// erased payload, and opens no incident.
	row, found, err := a.d.Rows.Row(ctx, outbox.RowRef{Key: dl.EventKey, Topic: dl.Topic})
	if err != nil {
		return dl, fmt.Errorf("archiver: read the dispatch row: %w", err)
	}
	if found && !row.ErasedAt.IsZero() {
		return dl, errErased
	}
	if !found {
		// The event is past its ledger retention (a dead letter can
		// outlive it: a DLQ keeps a message 14 days from its first
		// send): no marker to check. An erasure of its subject that ran
		// since the message was first sent covered the event, so the
		// dead letter is dropped before anything of it is stored; one
		// that starts after this check finds the incident through the
		// subject index on its pass after the writers' window.
		erased, err := a.d.Erasures.ErasedSince(ctx, ev.TenantID, []string{dl.Subject, dl.Owner}, firstSent(msg, ev))
		if err != nil {
			return dl, fmt.Errorf("archiver: look up the subject's erasures: %w", err)
		}
		if erased {
			return dl, errErased
		}
	}
	if dl.ErrorCode == "" {
		dl.ErrorCode = incident.CodeMaxReceives
		dl.ErrorMessage = "message exceeded the queue's maxReceiveCount"
		if found && row.LastError != "" {
			dl.ErrorMessage = row.LastError
		}
	}
	if dl.ErrorMessage == "" {
		dl.ErrorMessage = dl.ErrorCode
	}
	body, copyErr, err := a.d.Bodies.Capture(ctx, ev.TenantID, dl.IncidentID(), raw, &ev)
	if err != nil {
		return dl, err
	}
	if copyErr != nil {
		// The claim-check object is gone or unreadable: the body keeps its
		// original reference rather than lose the dead letter.
		details = append(details, "claim-checked payload not copied: "+copyErr.Error())
	}
	dl.Body = body
	dl.ErrorDetail = joinDetails(details)
	return dl, nil
}

// firstSent is when the dead letter's message was first sent (its
// SentTimestamp, which the redrive to the DLQ keeps); without it, the
// event's own timestamp.
func firstSent(msg events.SQSMessage, ev envelope.Event) time.Time {
	if ms, err := strconv.ParseInt(msg.Attributes["SentTimestamp"], 10, 64); err == nil && ms > 0 {
		return time.UnixMilli(ms)
	}
	return ev.Timestamp
}

// names are the subject identifiers of a dead letter's event, so an
// erasure finds its incident after the ledger item expired. A provider's
// event names its owner in its payload (subject.ReadsPayload): a
// claim-checked one is read (dead letters only; without it the envelope
// subject alone is recorded).
func (a *Archiver) names(ctx context.Context, ev envelope.Event) subject.Names {
	if ev.PayloadRef == nil || !subject.ReadsPayload(ev) || a.d.Bodies.Store == nil {
		return subject.Of(ev)
	}
	data, err := claimcheck.Load(ctx, a.d.Bodies.Store, *ev.PayloadRef)
	if err != nil {
		a.d.Log.WarnContext(ctx, "archiver: claim-checked payload unreadable; the incident names the envelope subject only", "eventId", ev.ID, "error", err)
		return subject.Of(ev)
	}
	ev.Payload, ev.PayloadRef = data, nil
	return subject.Of(ev)
}

func joinDetails(ds []string) string {
	out := ""
	for i, d := range ds {
		if i > 0 {
			out += "; "
		}
		out += d
	}
	return out
}

func tenantOrUnknown(t string) string {
	if t == "" {
		return incident.UnknownTenant
	}
	return t
}
