package jobkinds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/subject"
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
	// SubjectEvents pages the keys of a tenant's events naming a subject
	// identifier (subject.Names), through an index: never a read of the
	// whole tenant.
	SubjectEvents(ctx context.Context, q subject.Query) ([]string, string, error)
	// SubjectIncidents pages the ids of a tenant's incidents naming a
	// subject identifier, also those whose event's ledger item expired.
	SubjectIncidents(ctx context.Context, q subject.Query) ([]string, string, error)
	// Load reads one whole event: its ledger item and its outbox rows.
	Load(ctx context.Context, key string) (ledger.Record, []outbox.Row, error)
	// EraseEvent replaces the event's payload (and claim-check reference)
	// with ErasedMarker and puts the erasure marker on its outbox rows
	// (their lastError redacted), fenced by lease: a message still in
	// flight is then never delivered, dead-lettered or replayed.
	EraseEvent(ctx context.Context, lease jobs.Lease, p ledger.EraseParams) error
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

// ErasureObjects are the object stores an erasure deletes from (the
// versioned bucket: every version, by id).
type ErasureObjects interface {
	Deleter
	// EraseUnder deletes up to limit versions under prefix; more is true
	// when some may be left.
	EraseUnder(ctx context.Context, bucket, prefix string, limit int) ([]ObjectVersion, bool, error)
}

// ErasureDeps are the erasure's ports.
type ErasureDeps struct {
	Store   ErasureStore
	Objects ErasureObjects
	// Bucket holds the evidence (and the stores' objects).
	Bucket string
	// Now is the erasure's clock, which leases are compared with (default
	// the wall clock).
	Now func() time.Time
	// Rewrites rewrite shared objects (the audit archive, export parts);
	// ArchivePrefixes are the archive topics' prefixes
	// ("archive/<topic>/"); Jobs lists the tenant's exports. Without them
	// those stores are not reached (functions that only start jobs).
	Rewrites        Rewrites
	ArchivePrefixes []string
	Jobs            JobLister
	// WriterWindow is how long a writer may still copy an event's data
	// into an object after it read the event before the erasure marked it
	// (default WriterWindow); Poll how often the erasure looks at the jobs
	// it waits for (default 1 minute).
	WriterWindow time.Duration
	Poll         time.Duration
}

// WriterWindow bounds how long after an event's erasure marker a writer
// that read the event before it may still store an object holding its
// data: the DLQ archiver and the sweeper store a dead letter's body (or a
// copy of its claim-checked payload) under the incident's prefix before
// their guarded incident write, which the marker then refuses; each does
// so within one invocation (the sweeper's is the longest, 5 minutes). The
// erasure looks under those prefixes again once this has passed since it
// marked the subject's events (docs/architecture.md §5, guarantee 12;
// wire's TestTheErasureOutwaitsEveryWriter holds it against the
// functions' timeouts).
const WriterWindow = 6 * time.Minute

// ErasureArgs name the subject identifier to erase: an envelope subject,
// or an identifier a provider's payload names (a Stripe customer cus_…).
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
	Erased         int `json:"erased"`
	ObjectsDeleted int `json:"objectsDeleted"`
	Incidents      int `json:"incidentsRedacted"`
	Dispatches     int `json:"dispatchesRedacted"`
	// Stores counts what was erased in each store (StoreLedger, …):
	// items redacted, objects deleted or rewritten.
	Stores map[string]int `json:"stores"`
	// VersionsDeleted are the object versions deleted in all stores;
	// RecordsRemoved the subject's records taken out of shared objects
	// (archive, exports).
	VersionsDeleted int        `json:"versionsDeleted"`
	RecordsRemoved  int        `json:"recordsRemoved"`
	EvidenceKey     string     `json:"evidenceKey"`
	Deletions       []Deletion `json:"deletions,omitempty"`
}

// Phases of an erasure, in order.
const (
	// erasePhaseImports waits out the tenant's running file imports, then
	// rewrites the import files and their error reports.
	erasePhaseImports   = "imports"
	erasePhaseEvents    = "events"
	erasePhaseIncidents = "incidents"
	// erasePhaseInFlight waits out the deliveries that held a row when
	// its event was erased, then redacts what they wrote, and the writers'
	// window (WriterWindow).
	erasePhaseInFlight = "inflight"
	// The events and incidents again: an object a writer stored before its
	// guarded write was refused (under the incident's prefix) is deleted.
	erasePhaseRecheckEvents    = "recheck-events"
	erasePhaseRecheckIncidents = "recheck-incidents"
	// The shared copies, once nothing is in flight any more.
	erasePhaseArchives = "archives"
	erasePhaseExports  = "exports"
)

var erasePhases = []string{erasePhaseImports, erasePhaseEvents, erasePhaseIncidents, erasePhaseInFlight,
	erasePhaseRecheckEvents, erasePhaseRecheckIncidents, erasePhaseArchives, erasePhaseExports}

type erasureCheckpoint struct {
	Phase      string     `json:"phase,omitempty"`
	Cursor     string     `json:"cursor,omitempty"`
	Erased     int        `json:"erased"`
	Incidents  int        `json:"incidents"`
	Dispatches int        `json:"dispatches,omitempty"`
	Deletions  []Deletion `json:"deletions,omitempty"`
	// InFlight are the events one of whose rows a consumer held under a
	// live lease when it was erased; WaitUntil is when the last of those
	// leases ends.
	InFlight  []string  `json:"inFlight,omitempty"`
	WaitUntil time.Time `json:"waitUntil,omitzero"`
	// Days are the archive day prefixes still to read; Rewrites the
	// shared objects rewritten.
	Days     []string  `json:"days,omitempty"`
	Rewrites []Rewrite `json:"rewrites,omitempty"`
	// The items erased, by store (the evidence lists their keys).
	EventKeys   []string `json:"eventKeys,omitempty"`
	RowKeys     []string `json:"rowKeys,omitempty"`
	IncidentIDs []string `json:"incidentIds,omitempty"`
	// Found counts the events and incidents of the subject the erasure
	// found: with none, no writer can hold its data and there is no
	// writers' window to wait.
	Found int `json:"found,omitempty"`
	// Listed: the phase listed the tenant's jobs it is about; Waiting are
	// those it waits to end (running when listed), Done those that ended
	// since.
	Listed  bool     `json:"listed,omitempty"`
	Waiting []string `json:"waiting,omitempty"`
	Done    []string `json:"done,omitempty"`
	// Files are the import files still to rewrite; ImportJobs the
	// tenant's imports by file key (their report parts).
	Files      []string            `json:"files,omitempty"`
	ImportJobs map[string][]string `json:"importJobs,omitempty"`
}

// maxInlineEvidence bounds the deletions listed in the result itself.
const maxInlineEvidence = 50

// erasePageSize is how many events or incidents a step erases.
const erasePageSize = 100

// ErasureKind describes subject-erasure (Erasure runs it).
var ErasureKind = jobs.Kind{
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
}

// Erasure builds the subject-erasure kind. The subject's events are found
// through the subject identifier index (the envelope subject, or an
// identifier a provider's payload names: erasing a Stripe customer finds
// that customer's invoices), a page per step: each has its payload
// redacted (fenced), then its claim-checked payload, its incidents' bodies
// and payload copies deleted and confirmed absent, and its incidents
// redacted (fenced). Then the subject's incidents are found through the
// incidents table's subject index, so those whose event's ledger item
// expired are erased too. A new erasure of the same subject supersedes the
// running one (a new generation that starts over).
func Erasure(d ErasureDeps) jobs.Kind {
	return ErasureKind.With(
		jobs.HandlerFunc(func(ctx context.Context, s jobs.Step) (jobs.Outcome, error) {
			if d.Store == nil || d.Objects == nil {
				return jobs.Outcome{}, jobs.Fail("not_configured", errors.New("the erasure runs in jobs-worker, which has its stores"))
			}
			var a ErasureArgs
			if err := s.Args(&a); err != nil {
				return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
			}
			var cp erasureCheckpoint
			if err := s.Resume(&cp); err != nil {
				return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
			}
			if cp.Phase == "" {
				cp.Phase = erasePhases[0]
			}
			e := &eraseStep{d: d, s: s, subject: a.Subject, cp: &cp, now: clock.Or(d.Now)}
			done, err := e.run(ctx)
			if err != nil {
				return jobs.Outcome{}, err
			}
			if wait := cp.WaitUntil.Sub(e.now()); !done && cp.Phase == erasePhaseInFlight && wait > 0 {
				// A delivery that held a row at the erasure may still be
				// running (its lease bounds it), and a writer that read an
				// event before its marker may still store an object
				// (WriterWindow bounds it).
				return jobs.Snooze(wait+time.Second, cp), nil
			}
			if !done && e.snooze > 0 {
				return jobs.Snooze(e.snooze, cp), nil // a job it waits for is running
			}
			if !done {
				return jobs.Continue(cp), nil
			}
			ev := cp.evidence()
			res := ErasureResult{Erased: cp.Erased, ObjectsDeleted: len(cp.Deletions), Incidents: cp.Incidents, Dispatches: cp.Dispatches,
				Stores: map[string]int{}, EvidenceKey: s.Scope + "erasure-evidence.json"}
			for name, st := range ev {
				res.Stores[name] = st.Count
				res.VersionsDeleted += st.Versions
				res.RecordsRemoved += st.Records
			}
			evidence, err := json.MarshalIndent(map[string]any{"jobId": s.Job.ID, "tenantId": s.Job.TenantID, "subject": a.Subject, "generation": s.Job.Generation,
				"erased": cp.Erased, "incidentsRedacted": cp.Incidents, "dispatchesRedacted": cp.Dispatches, "stores": ev, "deletions": nonNil(cp.Deletions)}, "", "  ")
			if err != nil {
				return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
			}
			if err := d.Objects.Put(ctx, d.Bucket, res.EvidenceKey, evidence); err != nil {
				return jobs.Outcome{}, err
			}
			if len(cp.Deletions) <= maxInlineEvidence {
				res.Deletions = cp.Deletions
			}
			return jobs.Done(res), nil
		}),
	)
}

// eraseStep is one step of an erasure: one page of the current phase.
type eraseStep struct {
	d       ErasureDeps
	s       jobs.Step
	subject string
	cp      *erasureCheckpoint
	now     func() time.Time
	// snooze is set by a phase that waits for a job to end.
	snooze time.Duration
}

func (e *eraseStep) poll() time.Duration {
	if e.d.Poll > 0 {
		return e.d.Poll
	}
	return time.Minute
}

func (e *eraseStep) writerWindow() time.Duration {
	if e.d.WriterWindow > 0 {
		return e.d.WriterWindow
	}
	return WriterWindow
}

// run does one page of the current phase and moves to the next phase
// when it is spent; done when the last phase is.
func (e *eraseStep) run(ctx context.Context) (bool, error) {
	var (
		done bool
		err  error
	)
	paged := func(next string, err error) (bool, error) {
		e.cp.Cursor = next
		return next == "", err
	}
	switch e.cp.Phase {
	case erasePhaseImports:
		done, err = e.imports(ctx)
	case erasePhaseEvents, erasePhaseRecheckEvents:
		done, err = paged(e.events(ctx))
	case erasePhaseIncidents, erasePhaseRecheckIncidents:
		done, err = paged(e.incidents(ctx))
		if done && err == nil && e.cp.Phase == erasePhaseIncidents && e.cp.Found > 0 {
			// Every event of the subject is marked: a writer that read one
			// before may still store an object for it until then.
			if until := e.now().Add(e.writerWindow()); until.After(e.cp.WaitUntil) {
				e.cp.WaitUntil = until
			}
		}
	case erasePhaseInFlight:
		if e.cp.WaitUntil.After(e.now()) {
			return false, nil
		}
		done, err = true, e.inFlight(ctx)
	case erasePhaseArchives:
		done, err = paged(e.archives(ctx))
	case erasePhaseExports:
		done, err = e.exports(ctx)
	default:
		return false, jobs.Fail(jobs.CodeHandlerFailed, fmt.Errorf("unknown phase %q", e.cp.Phase))
	}
	if err != nil || !done {
		return false, err
	}
	i := slices.Index(erasePhases, e.cp.Phase)
	if i+1 == len(erasePhases) {
		return true, nil
	}
	e.cp.Phase = erasePhases[i+1]
	e.cp.Cursor, e.cp.Listed, e.cp.Waiting, e.cp.Done, e.cp.Files, e.cp.ImportJobs = "", false, nil, nil, nil, nil
	return false, nil
}

// recheck reports whether the step runs the second pass over the events
// and incidents (after the writers' window).
func (e *eraseStep) recheck() bool {
	return e.cp.Phase == erasePhaseRecheckEvents || e.cp.Phase == erasePhaseRecheckIncidents
}

func (e *eraseStep) query() subject.Query {
	return subject.Query{TenantID: e.s.Job.TenantID, ID: e.subject, Cursor: e.cp.Cursor, Limit: erasePageSize}
}

// events erases a page of the subject's events.
func (e *eraseStep) events(ctx context.Context) (string, error) {
	store := e.d.Store
	keys, next, err := store.SubjectEvents(ctx, e.query())
	if err != nil {
		return "", err
	}
	for _, key := range keys {
		r, rows, err := store.Load(ctx, key)
		if errors.Is(err, ledger.ErrNotFound) {
			continue // expired since the listing
		}
		if err != nil {
			return "", err
		}
		if r.Event.TenantID != e.s.Job.TenantID {
			continue // the index is scoped by tenant; a defence all the same
		}
		if !e.recheck() {
			e.cp.Found++
		}
		if err := e.event(ctx, r, rows); err != nil {
			return "", err
		}
	}
	return next, nil
}

// event erases one loaded event: its payload objects, its ledger item and
// rows (the marker), and its incidents.
func (e *eraseStep) event(ctx context.Context, r ledger.Record, rows []outbox.Row) error {
	store := e.d.Store
	// Objects first, then the fenced redaction that drops their
	// references: a crash in between leaves the references, so
	// the retry deletes (and confirms) again instead of leaking.
	// Every payload object stored for the event goes, not only the
	// one the ledger item references: each delivery of a provider's
	// retry (re-serialized: its own claim-check key) stored one, and
	// on the second pass the reference is gone while a publish that
	// read the event before its marker may have stored one since.
	if err := e.payloads(ctx, r.Event); err != nil {
		return err
	}
	payload := string(r.Event.Payload) != string(ErasedMarker) || r.Event.PayloadRef != nil
	unmarked, redact := 0, 0
	for _, row := range rows {
		if row.ErasedAt.IsZero() {
			unmarked++
		}
		if quotes(row) {
			redact++
		}
		if row.Status == outbox.StatusProcessing && row.LeaseUntil.After(e.now()) && !e.recheck() {
			// A consumer is delivering it right now: wait its lease
			// out, then redact what it wrote.
			e.cp.InFlight = append(e.cp.InFlight, r.Key)
			if row.LeaseUntil.After(e.cp.WaitUntil) {
				e.cp.WaitUntil = row.LeaseUntil
			}
		}
	}
	if payload || unmarked > 0 || redact > 0 {
		if err := store.EraseEvent(ctx, e.s.Lease, ledger.EraseParams{Key: r.Key, Rows: rows, At: e.now().UTC()}); err != nil {
			return err
		}
		if payload {
			e.cp.Erased++
			e.cp.EventKeys = append(e.cp.EventKeys, r.Key)
		}
		e.cp.Dispatches += redact
		for _, row := range rows {
			if quotes(row) {
				e.cp.RowKeys = append(e.cp.RowKeys, row.Ref().String())
			}
		}
	}
	for _, topic := range r.Topics {
		if _, err := e.incident(ctx, incident.ID(r.Key, topic), false); err != nil {
			return err
		}
	}
	return nil
}

// payloads deletes every version of every claim-checked payload object
// stored for ev (its claim-check prefix, and the object its reference
// names when that lies elsewhere), while the lease holds.
func (e *eraseStep) payloads(ctx context.Context, ev envelope.Event) error {
	if err := e.d.Store.Holds(ctx, e.s.Lease); err != nil {
		return err
	}
	prefix := claimcheck.Prefix(ev.TenantID, ev.ID)
	if err := e.eraseUnder(ctx, prefix); err != nil {
		return err
	}
	if ref := ev.PayloadRef; ref != nil && (ref.Bucket != e.d.Bucket || !strings.HasPrefix(ref.Key, prefix)) {
		d, err := deleteConfirmed(ctx, e.d.Objects, ref.Bucket, ref.Key)
		if err != nil {
			return err
		}
		e.cp.Deletions = append(e.cp.Deletions, d)
	}
	return nil
}

// incidents erases a page of the subject's incidents (those of events
// erased above are redacted already and cost a read).
func (e *eraseStep) incidents(ctx context.Context) (string, error) {
	ids, next, err := e.d.Store.SubjectIncidents(ctx, e.query())
	if err != nil {
		return "", err
	}
	for _, id := range ids {
		if !e.recheck() {
			e.cp.Found++
		}
		key, err := e.incident(ctx, id, true)
		if err != nil {
			return "", err
		}
		if key != "" {
			if err := e.restored(ctx, key); err != nil {
				return "", err
			}
		}
	}
	return next, nil
}

// restored erases an event a replay restored from one of the subject's
// incidents: a replay that read the incident before the erasure redacted
// it may have written the expired event's ledger item back from the
// incident's body (replay.Restorer: the write commits only while the
// incident is not erased, so once it is redacted above, whatever was
// restored is here to be found). An event erased already (the events
// pass found it) costs its read.
func (e *eraseStep) restored(ctx context.Context, key string) error {
	r, rows, err := e.d.Store.Load(ctx, key)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if r.Event.TenantID != e.s.Job.TenantID {
		return nil
	}
	done := r.Erased()
	for _, row := range rows {
		done = done && !row.ErasedAt.IsZero() && !quotes(row)
	}
	if done {
		return nil
	}
	return e.event(ctx, r, rows)
}

// inFlight redacts, once their leases ended, what the deliveries that
// held a row at the erasure wrote (a subscriber's answer in lastError);
// their dead letters were dropped (the row's marker) and they could not
// claim again.
func (e *eraseStep) inFlight(ctx context.Context) error {
	for _, key := range slices.Compact(slices.Sorted(slices.Values(e.cp.InFlight))) {
		r, rows, err := e.d.Store.Load(ctx, key)
		if errors.Is(err, ledger.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		for _, row := range rows {
			if !quotes(row) {
				continue
			}
			if err := e.d.Store.RedactDispatch(ctx, e.s.Lease, row.Ref()); err != nil {
				return err
			}
			e.cp.Dispatches++
			e.cp.RowKeys = append(e.cp.RowKeys, row.Ref().String())
		}
		for _, topic := range r.Topics {
			if _, err := e.incident(ctx, incident.ID(r.Key, topic), false); err != nil {
				return err
			}
		}
	}
	e.cp.InFlight = nil
	return nil
}

// quotes reports whether a row holds a subscriber's answer about the
// subject: in lastError, or kept by a delivery attempt.
func quotes(row outbox.Row) bool {
	if row.LastError != "" && row.LastError != incident.ErasedText {
		return true
	}
	for _, a := range row.DeliveryAttempts {
		if a.Answer != "" {
			return true
		}
	}
	return false
}

// incident erases one incident (eraseIncident) and returns the key of
// the event it is about ("" for none: no incident, or a raw dead letter).
func (e *eraseStep) incident(ctx context.Context, id string, payloads bool) (string, error) {
	n, key, err := e.eraseIncident(ctx, id, payloads)
	e.cp.Incidents += n
	return key, err
}

// eraseIncident deletes every object stored for an incident — each body
// it has had and its payload copies, everything under its prefix, also
// when there is no incident (a writer whose incident write the erasure
// marker refused stored them first) — and, when its event's ledger item
// may be gone, the event's claim-checked payloads (they outlive the ledger
// item until the bucket's lifecycle expires them); all confirmed absent,
// while the lease holds. Then it redacts the incident (body, error text,
// history notes: incident.Incident.Erased), fenced; n is 0 when there is none or
// it was redacted already. eventKey is the key of the incident's event
// ("" for none: no incident, or a raw dead letter).
func (e *eraseStep) eraseIncident(ctx context.Context, id string, payloads bool) (n int, eventKey string, err error) {
	inc, err := e.d.Store.Get(ctx, id)
	found := err == nil
	if err != nil && !isNotFound(err) {
		return 0, "", err
	}
	if found && inc.TenantID != e.s.Job.TenantID {
		return 0, "", nil
	}
	if err := e.d.Store.Holds(ctx, e.s.Lease); err != nil {
		return 0, "", err
	}
	if !found {
		return 0, "", e.eraseUnder(ctx, incident.ObjectPrefix(e.s.Job.TenantID, id))
	}
	if !inc.Raw && inc.EventID != "" {
		eventKey = inc.Key()
	}
	prefixes := []string{incident.ObjectPrefix(inc.TenantID, inc.ID)}
	if payloads && inc.EventID != "" {
		prefixes = append(prefixes, claimcheck.Prefix(inc.TenantID, inc.EventID))
	}
	for _, p := range prefixes {
		if err := e.eraseUnder(ctx, p); err != nil {
			return 0, "", err
		}
	}
	// An object outside the prefixes (a body stored under another
	// bucket or layout) is erased by its own key.
	for _, key := range []string{inc.Body.Key, inc.Body.PayloadKey} {
		if key == "" || strings.HasPrefix(key, prefixes[0]) && inc.Body.Bucket == e.d.Bucket {
			continue
		}
		d, err := deleteConfirmed(ctx, e.d.Objects, inc.Body.Bucket, key)
		if err != nil {
			return 0, "", err
		}
		if len(d.VersionIDs) > 0 {
			e.cp.Deletions = append(e.cp.Deletions, d)
		}
	}
	if inc.IsErased(ErasedMarker) {
		return 0, eventKey, nil
	}
	if err := e.d.Store.SaveFenced(ctx, e.s.Lease, inc.Erased(ErasedMarker)); err != nil {
		return 0, "", err
	}
	e.cp.IncidentIDs = append(e.cp.IncidentIDs, inc.ID)
	return 1, eventKey, nil
}

// eraseUnder deletes every version under prefix until a listing finds
// none (the proof of absence) and records a Deletion per object.
func (e *eraseStep) eraseUnder(ctx context.Context, prefix string) error {
	byKey := map[string]*Deletion{}
	var order []string
	for range 1000 {
		vs, _, err := e.d.Objects.EraseUnder(ctx, e.d.Bucket, prefix, purgeVersionsPerStep)
		if err != nil {
			return err
		}
		if len(vs) == 0 {
			now := time.Now().UTC()
			for _, k := range order {
				byKey[k].ConfirmedAbsent = now
				e.cp.Deletions = append(e.cp.Deletions, *byKey[k])
			}
			return nil
		}
		for _, v := range vs {
			d, ok := byKey[v.Key]
			if !ok {
				d = &Deletion{Bucket: e.d.Bucket, Key: v.Key}
				byKey[v.Key] = d
				order = append(order, v.Key)
			}
			d.VersionIDs = append(d.VersionIDs, v.VersionID)
		}
	}
	return fmt.Errorf("s3://%s/%s: versions keep appearing", e.d.Bucket, prefix)
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

// Stores an erasure reaches, as the evidence and the result name them.
const (
	StoreLedger          = "ledger"
	StoreDispatches      = "dispatches"
	StoreIncidents       = "incidents"
	StorePayloads        = "payloads"
	StoreIncidentObjects = "incidentObjects"
	StoreOther           = "objects"
)

// StoreEvidence is what an erasure did in one store: how many items it
// redacted or objects it deleted or rewrote (Count), their keys, the
// object versions deleted (each by id) and, for shared objects, the
// subject's records removed and the versions written instead.
type StoreEvidence struct {
	Count    int        `json:"count"`
	Keys     []string   `json:"keys"`
	Versions int        `json:"versionsDeleted,omitempty"`
	Records  int        `json:"recordsRemoved,omitempty"`
	Objects  []Deletion `json:"objects,omitempty"`
	Rewrites []Rewrite  `json:"rewrites,omitempty"`
}

// evidence groups what the erasure did by store: every store appears,
// with a count of 0 when it held nothing of the subject.
func (cp *erasureCheckpoint) evidence() map[string]*StoreEvidence {
	out := map[string]*StoreEvidence{}
	for _, name := range []string{StoreLedger, StoreDispatches, StoreIncidents, StorePayloads, StoreIncidentObjects, StoreArchive, StoreExports, StoreImports} {
		out[name] = &StoreEvidence{Keys: []string{}}
	}
	add := func(name string, keys ...string) {
		st := out[name]
		st.Keys = append(st.Keys, keys...)
		st.Count = len(st.Keys)
	}
	add(StoreLedger, cp.EventKeys...)
	add(StoreDispatches, cp.RowKeys...)
	add(StoreIncidents, cp.IncidentIDs...)
	for _, d := range cp.Deletions {
		name := StoreOther
		switch {
		case strings.HasPrefix(d.Key, "payloads/"):
			name = StorePayloads
		case strings.HasPrefix(d.Key, "incidents/"):
			name = StoreIncidentObjects
		}
		if out[name] == nil {
			out[name] = &StoreEvidence{Keys: []string{}}
		}
		add(name, d.Key)
		out[name].Versions += len(d.VersionIDs)
		out[name].Objects = append(out[name].Objects, d)
	}
	for _, r := range cp.Rewrites {
		add(r.Store, r.Key)
		out[r.Store].Versions += len(r.VersionIDs)
		out[r.Store].Records += r.Removed
		out[r.Store].Rewrites = append(out[r.Store].Rewrites, r)
	}
	return out
}
