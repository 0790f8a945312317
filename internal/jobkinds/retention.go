package jobkinds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/retention"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// KindRetention is the retention expiry's kind name.
const KindRetention = retention.KindPurge

// Policies read the policy a purge applies (*retention.Service).
type Policies interface {
	Effective(ctx context.Context, tenant string) (retention.Policy, retention.Periods, error)
}

// PurgeStore finds and deletes a tenant's items past a cutoff; every
// delete carries the step's lease (fenced).
type PurgeStore interface {
	// OldEvents pages the tenant's events accepted before q.Before,
	// oldest first (summaries: key and topics).
	OldEvents(ctx context.Context, q retention.Query) ([]ledger.Record, string, error)
	// Record reads one whole event (its claim-check reference).
	Record(ctx context.Context, key string) (ledger.Record, error)
	// DeleteEvent deletes the event's ledger item and outbox rows.
	DeleteEvent(ctx context.Context, lease jobs.Lease, key string, topics []string) error
	// OldIncidents pages the tenant's resolved or ignored incidents whose
	// last failure is before q.Before, oldest first.
	OldIncidents(ctx context.Context, q retention.Query) ([]incident.Incident, string, error)
	// DeleteIncident deletes an incident unless it changed since it was
	// read (incident.ErrConflict: it is kept).
	DeleteIncident(ctx context.Context, lease jobs.Lease, inc incident.Incident) error
	// Holds fails unless the step still holds its lease.
	Holds(ctx context.Context, lease jobs.Lease) error
}

// ObjectVersion is one stored version of an object.
type ObjectVersion struct {
	Key       string `json:"key"`
	VersionID string `json:"versionId"`
}

// PurgeObjects deletes objects on the versioned bucket, every version by
// id.
type PurgeObjects interface {
	// Erase deletes every version of one object.
	Erase(ctx context.Context, bucket, key string) ([]string, error)
	// EraseUnder deletes up to limit versions under prefix; more is true
	// when some may be left.
	EraseUnder(ctx context.Context, bucket, prefix string, limit int) ([]ObjectVersion, bool, error)
	// Subprefixes lists the prefixes right under prefix (at the next "/").
	Subprefixes(ctx context.Context, bucket, prefix string) ([]string, error)
	Put(ctx context.Context, bucket, key string, body []byte) error
	// ListVersions lists every version under prefix (when each was
	// written: import files are purged by age).
	ListVersions(ctx context.Context, bucket, prefix string) ([]StoredVersion, error)
	DeleteVersion(ctx context.Context, bucket, key, versionID string) error
}

// JobLister pages a tenant's jobs (the jobs store): the purge finds the
// tenant's exports and imports through their jobs, and the erasure the
// ones whose output it rewrites (and waits out the running ones).
type JobLister interface {
	List(ctx context.Context, p jobs.ListParams) (jobs.Page, error)
	// Get reads one job; false when it is gone.
	Get(ctx context.Context, id string) (jobs.Job, bool, error)
}

// RetentionDeps are the purge's ports.
type RetentionDeps struct {
	Policies Policies
	Store    PurgeStore
	Objects  PurgeObjects
	Jobs     JobLister
	Bucket   string
	// ArchivePrefixes are the audit archive's topic prefixes
	// ("archive/<topic>/"): days under them are dated <yyyy>/<mm>/<dd>/
	// with a directory per tenant.
	ArchivePrefixes []string
	// Now is the purge's clock (cutoffs are taken from it; default the
	// wall clock).
	Now func() time.Time
	// JobsPrefix is where job output lives ("jobs/": an export's under
	// jobs/<jobId>/).
	JobsPrefix string
}

// RetentionArgs are what started the purge: a date (the daily run), a
// policy version (a policy that shortened), or nothing (an operator).
type RetentionArgs struct {
	Date          string `json:"date,omitempty"`
	PolicyVersion int    `json:"policyVersion,omitempty"`
}

// RetentionResult is the purge's result: what it deleted from each store,
// and the evidence object listing every key and version.
type RetentionResult struct {
	PolicyVersion   int               `json:"policyVersion"`
	Periods         retention.Periods `json:"periods"`
	Cutoffs         retention.Cutoffs `json:"cutoffs"`
	Events          int               `json:"eventsDeleted"`
	Payloads        int               `json:"payloadObjectsDeleted"`
	Incidents       int               `json:"incidentsDeleted"`
	IncidentsKept   int               `json:"incidentsKept"`
	IncidentObjects int               `json:"incidentObjectsDeleted"`
	ArchiveObjects  int               `json:"archiveVersionsDeleted"`
	Exports         int               `json:"exportsPurged"`
	ExportObjects   int               `json:"exportVersionsDeleted"`
	// ImportObjects are the versions of import files and their error
	// reports deleted (imports/<tenant>/…, and the report parts of the
	// imports purged, Imports).
	ImportObjects int      `json:"importVersionsDeleted"`
	Imports       int      `json:"importsPurged"`
	EvidenceKey   string   `json:"evidenceKey"`
	EvidenceParts []string `json:"evidenceParts,omitempty"`
}

// Phases of a purge, in order.
const (
	phaseEvents    = "events"
	phaseIncidents = "incidents"
	phaseArchives  = "archives"
	phaseExports   = "exports"
	// phaseImports applies eventsDays to the files the tenant dropped to
	// import: a file is a copy of the events it published, and is kept no
	// longer than they are.
	phaseImports = "imports"
)

type retentionCheckpoint struct {
	Result RetentionResult `json:"result"`
	Phase  string          `json:"phase"`
	Cursor string          `json:"cursor,omitempty"`
	// Days are the archive day prefixes still to purge (found when the
	// phase starts).
	Days []string `json:"days,omitempty"`
	// Export is an export (or import) whose objects are being deleted
	// (more than one step's worth).
	Export string `json:"export,omitempty"`
	// FilesDone: the imports phase deleted the old import files and
	// moves on to the imports' output.
	FilesDone bool `json:"filesDone,omitempty"`
}

// Per step bounds (a step must end well inside its timeout).
const (
	purgeEventsPerStep    = 100
	purgeIncidentsPerStep = 100
	purgeVersionsPerStep  = 1000
	purgeDaysPerStep      = 50
	// ExportsKeptFor is how long a finished export's job is kept: longer
	// than any tenant may keep an export, so the purge always finds it.
	ExportsKeptFor = (retention.MaxExportDays + 35) * retention.Day
	// ImportsKeptFor is how long a finished import's job is kept: the
	// purge finds its report parts (jobs/<import>/…) through it.
	ImportsKeptFor = ExportsKeptFor
)

// evidenceEntry is one line of a step's evidence part.
type evidenceEntry struct {
	Store     string   `json:"store"`
	Key       string   `json:"key"`
	Versions  []string `json:"versionIds,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	DeletedAt string   `json:"deletedAt"`
}

// RetentionKind describes retention-expiry (Retention runs it). Its daily
// run per tenant with a policy is jobs-sweep's: the sweep gives the
// description the tenants to start it for (jobs.Kind.DailyTenants).
var RetentionKind = jobs.Kind{
	Name:        KindRetention,
	StepTimeout: 2 * time.Minute,
	CheckArgs: func(raw json.RawMessage) error {
		var a RetentionArgs
		if err := strictArgs(raw, &a); err != nil {
			return err
		}
		if a.Date != "" {
			if _, err := time.Parse(time.DateOnly, a.Date); err != nil {
				return &jobs.RequestError{Code: jobs.CodeInvalidArgs, Message: "date must be YYYY-MM-DD"}
			}
		}
		if a.PolicyVersion < 0 {
			return &jobs.RequestError{Code: jobs.CodeInvalidArgs, Message: "policyVersion must be positive"}
		}
		return nil
	},
}

// Retention builds the retention-expiry kind: it applies a tenant's policy
// to what is stored, store by store (events with their outbox rows and
// claim-checked payloads; resolved or ignored incidents with their bodies;
// audit archive days; export output; import files, their error reports and
// the imports' output, by eventsDays), oldest first, in bounded steps.
// The policy and its cutoffs are fixed at the first step and kept in the
// checkpoint, so a policy edited meanwhile applies at the next run. Every
// delete is fenced by the step's lease; object deletes remove every
// version. Each step writes what it deleted to an evidence part under its
// scope; the last writes the evidence object listing the parts and counts.
// A daily schedule runs it for every tenant with a policy (keyed by the
// date); a policy that shortens a period starts one at once.
func Retention(d RetentionDeps) jobs.Kind {
	return RetentionKind.With(
		jobs.HandlerFunc(func(ctx context.Context, s jobs.Step) (jobs.Outcome, error) {
			if d.Policies == nil || d.Store == nil || d.Objects == nil || d.Jobs == nil {
				return jobs.Outcome{}, jobs.Fail("not_configured", errors.New("the retention expiry runs in jobs-worker, which has its stores"))
			}
			var cp retentionCheckpoint
			if err := s.Resume(&cp); err != nil {
				return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
			}
			if cp.Phase == "" {
				pol, periods, err := d.Policies.Effective(ctx, s.Job.TenantID)
				if err != nil {
					return jobs.Outcome{}, err
				}
				cp.Result = RetentionResult{PolicyVersion: pol.Version, Periods: periods, Cutoffs: periods.Cutoffs(clock.Or(d.Now)())}
				cp.Phase = phaseEvents
			}
			p := &purgeStep{d: d, s: s, cp: &cp}
			if err := p.run(ctx); err != nil {
				return jobs.Outcome{}, err
			}
			if err := p.writeEvidence(ctx); err != nil {
				return jobs.Outcome{}, err
			}
			if cp.Phase != "" {
				return jobs.Continue(cp).WithProgress(p.progress()), nil
			}
			res := cp.Result
			res.EvidenceKey = s.Scope + "retention-evidence.json"
			body, err := json.MarshalIndent(map[string]any{"jobId": s.Job.ID, "tenantId": s.Job.TenantID, "generation": s.Job.Generation, "result": res}, "", "  ")
			if err != nil {
				return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
			}
			if err := d.Objects.Put(ctx, d.Bucket, res.EvidenceKey, body); err != nil {
				return jobs.Outcome{}, err
			}
			return jobs.Done(res).WithProgress(p.progress()), nil
		}),
	)
}

// purgeStep is one step of a purge: it advances the checkpoint's phase by
// at most one bounded batch and records what it deleted.
type purgeStep struct {
	d        RetentionDeps
	s        jobs.Step
	cp       *retentionCheckpoint
	evidence []evidenceEntry
}

func (p *purgeStep) note(store, key string, versions []string, reason string) {
	p.evidence = append(p.evidence, evidenceEntry{Store: store, Key: key, Versions: versions, Reason: reason, DeletedAt: time.Now().UTC().Format(time.RFC3339Nano)})
}

func (p *purgeStep) progress() jobs.Progress {
	r := p.cp.Result
	return jobs.Progress{Done: int64(r.Events + r.Incidents + r.ArchiveObjects + r.ExportObjects + r.ImportObjects), Unit: "deleted", Counts: map[string]int64{
		"events": int64(r.Events), "incidents": int64(r.Incidents), "archiveVersions": int64(r.ArchiveObjects), "exports": int64(r.Exports),
		"importVersions": int64(r.ImportObjects),
	}}
}

// next moves to the phase after the current one.
func (p *purgeStep) next() {
	order := []string{phaseEvents, phaseIncidents, phaseArchives, phaseExports, phaseImports, ""}
	for i, ph := range order {
		if ph == p.cp.Phase {
			p.cp.Phase, p.cp.Cursor, p.cp.Days, p.cp.Export, p.cp.FilesDone = order[i+1], "", nil, "", false
			return
		}
	}
	p.cp.Phase = ""
}

// run does the current phase's batch; a phase with nothing (left) to do
// hands over to the next within the same step.
func (p *purgeStep) run(ctx context.Context) error {
	for p.cp.Phase != "" {
		var done bool
		var err error
		switch p.cp.Phase {
		case phaseEvents:
			done, err = p.events(ctx)
		case phaseIncidents:
			done, err = p.incidents(ctx)
		case phaseArchives:
			done, err = p.archives(ctx)
		case phaseExports:
			done, err = p.exports(ctx)
		case phaseImports:
			done, err = p.imports(ctx)
		default:
			return jobs.Fail(jobs.CodeHandlerFailed, fmt.Errorf("unknown phase %q", p.cp.Phase))
		}
		if err != nil {
			return err
		}
		if !done {
			return nil // the batch is spent: commit, then the next step
		}
		p.next()
		if len(p.evidence) > 0 {
			return nil // commit what this step deleted before the next store
		}
	}
	return nil
}

// events deletes one page of events past the cutoff: the claim-checked
// payload's versions first (while the lease holds), then the ledger item
// and its outbox rows in one fenced transaction; a crash in between
// leaves the item, so the retry erases (nothing left) and deletes again.
func (p *purgeStep) events(ctx context.Context) (bool, error) {
	cut := p.cp.Result.Cutoffs.Events
	if cut.IsZero() {
		return true, nil
	}
	// Deleting what a page returned moves the listing on by itself: the
	// next page starts at the oldest event left, so no cursor is kept.
	recs, next, err := p.d.Store.OldEvents(ctx, retention.Query{TenantID: p.s.Job.TenantID, Before: cut, Limit: purgeEventsPerStep})
	if err != nil {
		return false, err
	}
	for _, sum := range recs {
		r, err := p.d.Store.Record(ctx, sum.Key)
		if errors.Is(err, ledger.ErrNotFound) {
			continue // expired (TTL) since the listing
		}
		if err != nil {
			return false, err
		}
		if ref := r.Event.PayloadRef; ref != nil {
			if err := p.d.Store.Holds(ctx, p.s.Lease); err != nil {
				return false, err
			}
			ids, err := p.d.Objects.Erase(ctx, ref.Bucket, ref.Key)
			if err != nil {
				return false, err
			}
			if len(ids) > 0 {
				p.cp.Result.Payloads++
				p.note("payloads", ref.Key, ids, "")
			}
		}
		if err := p.d.Store.DeleteEvent(ctx, p.s.Lease, r.Key, r.Topics); err != nil {
			return false, err
		}
		p.cp.Result.Events++
		p.note("events", r.Key, nil, "")
	}
	return next == "" && len(recs) < purgeEventsPerStep, nil
}

// incidents deletes one page of resolved or ignored incidents resolved
// before the cutoff, their stored bodies first; open, triaged and
// retrying incidents are never touched, and one that changed since it was
// read (a new dead letter) is kept.
func (p *purgeStep) incidents(ctx context.Context) (bool, error) {
	cut := p.cp.Result.Cutoffs.Incidents
	if cut.IsZero() {
		return true, nil
	}
	incs, next, err := p.d.Store.OldIncidents(ctx, retention.Query{TenantID: p.s.Job.TenantID, Before: cut, Limit: purgeIncidentsPerStep, Cursor: p.cp.Cursor})
	if err != nil {
		return false, err
	}
	for _, inc := range incs {
		if resolvedAt(inc).After(cut) {
			continue // failed long ago, resolved recently: not yet
		}
		keys := []string{}
		for _, k := range []string{inc.Body.Key, inc.Body.PayloadKey} {
			if k != "" {
				keys = append(keys, k)
			}
		}
		if len(keys) > 0 {
			if err := p.d.Store.Holds(ctx, p.s.Lease); err != nil {
				return false, err
			}
		}
		for _, k := range keys {
			ids, err := p.d.Objects.Erase(ctx, inc.Body.Bucket, k)
			if err != nil {
				return false, err
			}
			if len(ids) > 0 {
				p.cp.Result.IncidentObjects++
				p.note("incidentObjects", k, ids, "")
			}
		}
		err := p.d.Store.DeleteIncident(ctx, p.s.Lease, inc)
		if errors.Is(err, incident.ErrConflict) {
			p.cp.Result.IncidentsKept++
			continue
		}
		if err != nil {
			return false, err
		}
		p.cp.Result.Incidents++
		p.note("incidents", inc.ID, nil, string(inc.Status))
	}
	// Kept incidents stay in the index, so the listing continues from its
	// cursor rather than from the start.
	p.cp.Cursor = next
	return next == "", nil
}

// resolvedAt is when an incident left work: its resolution, or (ignored
// ones record none in older items) its last update.
func resolvedAt(inc incident.Incident) time.Time {
	if !inc.ResolvedAt.IsZero() {
		return inc.ResolvedAt
	}
	return inc.UpdatedAt
}

// archives deletes the tenant's archive objects of days before the
// cutoff: the days are found once (per topic: years, months, days), then
// erased a batch of versions at a time.
func (p *purgeStep) archives(ctx context.Context) (bool, error) {
	cut := p.cp.Result.Cutoffs.Archives
	if cut.IsZero() {
		return true, nil
	}
	if p.cp.Cursor == "" {
		days, err := p.archiveDays(ctx, cut)
		if err != nil {
			return false, err
		}
		p.cp.Days, p.cp.Cursor = days, "listed"
	}
	budget, daysDone := purgeVersionsPerStep, 0
	for len(p.cp.Days) > 0 && budget > 0 && daysDone < purgeDaysPerStep {
		prefix := p.cp.Days[0] + p.s.Job.TenantID + "/"
		if err := p.d.Store.Holds(ctx, p.s.Lease); err != nil {
			return false, err
		}
		vs, more, err := p.d.Objects.EraseUnder(ctx, p.d.Bucket, prefix, budget)
		if err != nil {
			return false, err
		}
		for _, v := range vs {
			p.note("archives", v.Key, []string{v.VersionID}, "")
		}
		p.cp.Result.ArchiveObjects += len(vs)
		budget -= len(vs)
		if !more {
			p.cp.Days, daysDone = p.cp.Days[1:], daysDone+1
		}
	}
	return len(p.cp.Days) == 0, nil
}

// archiveDays lists the archive day prefixes (<topic prefix><yyyy>/<mm>/<dd>/)
// of days wholly before cut.
func (p *purgeStep) archiveDays(ctx context.Context, cut time.Time) ([]string, error) {
	var days []string
	for _, top := range p.d.ArchivePrefixes {
		years, err := p.d.Objects.Subprefixes(ctx, p.d.Bucket, top)
		if err != nil {
			return nil, err
		}
		for _, y := range years {
			if !dayPartBefore(y, top, cut, "2006") {
				continue
			}
			months, err := p.d.Objects.Subprefixes(ctx, p.d.Bucket, y)
			if err != nil {
				return nil, err
			}
			for _, m := range months {
				if !dayPartBefore(m, top, cut, "2006/01") {
					continue
				}
				ds, err := p.d.Objects.Subprefixes(ctx, p.d.Bucket, m)
				if err != nil {
					return nil, err
				}
				for _, dd := range ds {
					if dayPartBefore(dd, top, cut, "2006/01/02") && strictlyBefore(dd, top, cut) {
						days = append(days, dd)
					}
				}
			}
		}
	}
	return days, nil
}

// dayPartBefore reports whether a year, month or day prefix under top
// can hold days before cut (it starts before cut).
func dayPartBefore(prefix, top string, cut time.Time, layout string) bool {
	t, err := time.Parse(layout, strings.TrimSuffix(strings.TrimPrefix(prefix, top), "/"))
	return err == nil && t.Before(cut)
}

// strictlyBefore reports whether a day prefix's whole day is before cut.
func strictlyBefore(prefix, top string, cut time.Time) bool {
	t, err := time.Parse("2006/01/02", strings.TrimSuffix(strings.TrimPrefix(prefix, top), "/"))
	return err == nil && !t.Add(retention.Day).After(cut)
}

// exports deletes every version of the output of the tenant's exports
// that finished before the cutoff (found through their jobs, kept
// ExportsKeptFor), a batch at a time.
func (p *purgeStep) exports(ctx context.Context) (bool, error) {
	cut := p.cp.Result.Cutoffs.Exports
	if cut.IsZero() {
		return true, nil
	}
	return p.jobOutputs(ctx, KindExport, cut, "exports", &p.cp.Result.ExportObjects, &p.cp.Result.Exports)
}

// imports deletes the tenant's import files and their error reports
// (imports/<tenant>/…) written before the events cutoff, each version by
// id (a version written since stays), then the output of the tenant's
// imports that finished before it (their report parts, under
// jobs/<import>/; the jobs are kept ImportsKeptFor), a batch at a time.
func (p *purgeStep) imports(ctx context.Context) (bool, error) {
	cut := p.cp.Result.Cutoffs.Events
	if cut.IsZero() {
		return true, nil
	}
	if !p.cp.FilesDone {
		vs, err := p.d.Objects.ListVersions(ctx, p.d.Bucket, ImportPrefix+p.s.Job.TenantID+"/")
		if err != nil {
			return false, err
		}
		budget, held := purgeVersionsPerStep, false
		for _, v := range vs {
			if !v.LastModified.Before(cut) {
				continue
			}
			if budget == 0 {
				return false, nil // the next step lists what is left
			}
			if !held {
				if err := p.d.Store.Holds(ctx, p.s.Lease); err != nil {
					return false, err
				}
				held = true
			}
			if err := p.d.Objects.DeleteVersion(ctx, p.d.Bucket, v.Key, v.VersionID); err != nil {
				return false, err
			}
			p.note("imports", v.Key, []string{v.VersionID}, "")
			p.cp.Result.ImportObjects++
			budget--
		}
		p.cp.FilesDone = true
		if budget < purgeVersionsPerStep {
			return false, nil // commit the files' evidence first
		}
	}
	return p.jobOutputs(ctx, KindFileImport, cut, "imports", &p.cp.Result.ImportObjects, &p.cp.Result.Imports)
}

// jobOutputs deletes every version of the output of the tenant's jobs of
// kind that finished before cut, a batch at a time, counting versions and
// jobs purged.
func (p *purgeStep) jobOutputs(ctx context.Context, kind string, cut time.Time, store string, versions, purged *int) (bool, error) {
	budget := purgeVersionsPerStep
	if p.cp.Export != "" {
		more, err := p.eraseJobOutput(ctx, p.cp.Export, store, &budget, versions, purged)
		if err != nil || more {
			return false, err
		}
		p.cp.Export = ""
	}
	if p.cp.Cursor == "end" {
		return true, nil
	}
	// Cursor: the listing page to read ("" the first, "end" none left).
	page, err := p.d.Jobs.List(ctx, jobs.ListParams{TenantID: p.s.Job.TenantID, Limit: jobs.MaxListLimit, Cursor: p.cp.Cursor})
	if err != nil {
		return false, err
	}
	for _, j := range page.Jobs {
		if j.Kind != kind || !j.Status.Terminal() || j.FinishedAt.IsZero() || !j.FinishedAt.Before(cut) {
			continue
		}
		if budget <= 0 {
			// Left for the next step, which reads this page again (the
			// jobs erased already have nothing left: no cost but a list).
			return false, nil
		}
		more, err := p.eraseJobOutput(ctx, j.ID, store, &budget, versions, purged)
		if err != nil {
			return false, err
		}
		if more {
			p.cp.Export = j.ID
			p.cp.Cursor = page.Cursor
			if p.cp.Cursor == "" {
				p.cp.Cursor = "end"
			}
			return false, nil
		}
	}
	if page.Cursor == "" {
		return true, nil
	}
	p.cp.Cursor = page.Cursor
	return false, nil
}

// eraseJobOutput erases up to *budget versions of a job's output; more
// when some are left.
func (p *purgeStep) eraseJobOutput(ctx context.Context, jobID, store string, budget, versions, purged *int) (bool, error) {
	if err := p.d.Store.Holds(ctx, p.s.Lease); err != nil {
		return false, err
	}
	prefix := path.Join(strings.TrimSuffix(p.d.JobsPrefix, "/"), jobID) + "/"
	vs, more, err := p.d.Objects.EraseUnder(ctx, p.d.Bucket, prefix, *budget)
	if err != nil {
		return false, err
	}
	*budget -= len(vs)
	for _, v := range vs {
		p.note(store, v.Key, []string{v.VersionID}, jobID)
	}
	*versions += len(vs)
	if len(vs) > 0 && !more {
		*purged++
	}
	return more, nil
}

// writeEvidence writes what this step deleted (NDJSON) under its scope
// and records the part in the checkpoint.
func (p *purgeStep) writeEvidence(ctx context.Context) error {
	if len(p.evidence) == 0 {
		return nil
	}
	var b strings.Builder
	for _, e := range p.evidence {
		line, err := json.Marshal(e)
		if err != nil {
			return jobs.Fail(jobs.CodeHandlerFailed, err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	key := p.s.Scope + "retention-deleted.ndjson"
	if err := p.d.Objects.Put(ctx, p.d.Bucket, key, []byte(b.String())); err != nil {
		return err
	}
	p.cp.Result.EvidenceParts = append(p.cp.Result.EvidenceParts, key)
	return nil
}

// ArchivePrefixes are the audit archive's topic prefixes
// ("<prefix>/<topic>/") of the topology's archive topics.
func ArchivePrefixes(top topology.Topology, prefix string) []string {
	var out []string
	for _, tp := range top.Topics {
		if tp.Consumer == topology.ConsumerArchive {
			out = append(out, prefix+"/"+tp.Name+"/")
		}
	}
	return out
}
