package jobkinds

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/subject"
)

// The copies an erasure rewrites: the audit archive (NDJSON objects of a
// tenant's day, written by consumer-archive) and the output of the
// tenant's earlier exports (gzip NDJSON parts). They hold many subjects'
// records, so they are rewritten without the subject's records (a new
// version) and every earlier version is deleted by id; an object left
// with no record is deleted whole.

// StoredVersion is one version of an object on the versioned bucket.
type StoredVersion struct {
	Key          string    `json:"key"`
	VersionID    string    `json:"versionId"`
	Latest       bool      `json:"latest,omitempty"`
	DeleteMarker bool      `json:"deleteMarker,omitempty"`
	Size         int64     `json:"size,omitempty"`
	LastModified time.Time `json:"lastModified,omitzero"`
	// ETag is the version's entity tag (none for a delete marker).
	ETag string `json:"etag,omitempty"`
}

// Rewrites are what an erasure needs to rewrite shared objects.
type Rewrites interface {
	// ListVersions lists every version under prefix, delete markers
	// included, by key, newest first.
	ListVersions(ctx context.Context, bucket, prefix string) ([]StoredVersion, error)
	GetVersion(ctx context.Context, bucket, key, versionID string) ([]byte, error)
	// OpenVersion opens one version as a stream (an object too large to
	// hold is scanned, not read whole).
	OpenVersion(ctx context.Context, bucket, key, versionID string) (io.ReadCloser, error)
	// PutVersion writes an object with user metadata (nil: none) and
	// returns its new version id. With ifMatch (an ETag) it writes only
	// while the object's current version has that ETag, and fails with
	// ErrObjectChanged otherwise: a newer version someone else wrote
	// stays current.
	PutVersion(ctx context.Context, bucket, key string, body []byte, metadata map[string]string, ifMatch string) (string, error)
	DeleteVersion(ctx context.Context, bucket, key, versionID string) error
	// Subprefixes lists the prefixes right under prefix (at the next "/").
	Subprefixes(ctx context.Context, bucket, prefix string) ([]string, error)
}

// Rewrite is the evidence of one shared object rewritten without the
// subject's records: the records removed, the version written (none when
// nothing was left: the object is gone) and every earlier version
// deleted.
type Rewrite struct {
	Store      string   `json:"store"`
	Bucket     string   `json:"bucket"`
	Key        string   `json:"key"`
	Removed    int      `json:"recordsRemoved"`
	NewVersion string   `json:"newVersionId,omitempty"`
	VersionIDs []string `json:"versionIdsDeleted"`
	// Reason says why an object was deleted whole instead (a file too
	// large to rewrite in a step).
	Reason string `json:"reason,omitempty"`
}

// Stores named in the evidence.
const (
	StoreArchive = "archive"
	StoreExports = "exports"
)

// erasureRewritesPerStep bounds the objects a step reads.
const erasureRewritesPerStep = 200

// lineNames are the subject identifiers of one stored record: an envelope
// (an archived or exported event), or an incident (an exported one: its
// subject and owner, and its inline body's).
func lineNames(line []byte) []subject.Names {
	var rec struct {
		IncidentID string `json:"incidentId"`
		Subject    string `json:"subject"`
		Owner      string `json:"owner"`
		Body       struct {
			Inline []byte `json:"inline"`
		} `json:"body"`
	}
	if json.Unmarshal(line, &rec) != nil {
		return nil
	}
	if rec.IncidentID == "" {
		var ev envelope.Event
		if json.Unmarshal(line, &ev) != nil {
			return nil
		}
		return []subject.Names{subject.Of(ev)}
	}
	out := []subject.Names{{Subject: rec.Subject, Owner: rec.Owner}}
	var ev envelope.Event
	if len(rec.Body.Inline) > 0 && json.Unmarshal(rec.Body.Inline, &ev) == nil {
		out = append(out, subject.Of(ev))
	}
	return out
}

// names reports whether a stored record names id.
func names(line []byte, id string) bool {
	for _, n := range lineNames(line) {
		if n.Has(id) {
			return true
		}
	}
	return false
}

// without drops the lines naming id from an NDJSON body (gzip when gz);
// removed is how many it dropped, kept how many are left.
func without(body []byte, gz bool, id string) (out []byte, removed, kept int, err error) {
	if gz {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, 0, 0, err
		}
		if body, err = io.ReadAll(zr); err != nil {
			return nil, 0, 0, err
		}
	}
	var buf bytes.Buffer
	for line := range bytes.SplitSeq(body, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if names(line, id) {
			removed++
			continue
		}
		kept++
		buf.Write(line)
		buf.WriteByte('\n')
	}
	out = buf.Bytes()
	if gz {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		_, _ = zw.Write(out)
		if err := zw.Close(); err != nil {
			return nil, 0, 0, err
		}
		out = z.Bytes()
	}
	return out, removed, kept, nil
}

// rewriteObject removes the subject's records from every version of one
// archive object or export part (NDJSON, gzip when gz): see rewriteWith.
func (e *eraseStep) rewriteObject(ctx context.Context, store, key string, versions []StoredVersion, gz bool) (*Rewrite, []byte, error) {
	return e.rewriteWith(ctx, store, key, versions, func(body []byte) ([]byte, int, int, error) {
		return without(body, gz, e.subject)
	})
}

// rewriteWith removes the subject's records from every version of one
// object with filter (the body without them, how many it removed and how
// many records are left): when any version holds one, the latest version's
// other records become a new version (none when nothing is left), which
// names the erasure in its metadata (MetaRewrittenBy), and every earlier
// version is deleted by id; a latest version without the subject's
// records stays as it is (so does its version id: an import that pinned
// it still reads it). Nil when no version named the subject. The new
// version is written only while the latest version is the one read (a
// conditional write on its ETag): a version someone wrote since (a
// tenant's upload of the same import file) is never made noncurrent by
// the rewrite, nor deleted (only the versions read are); the write fails
// with ErrObjectChanged and the caller reads the object again.
func (e *eraseStep) rewriteWith(ctx context.Context, store, key string, versions []StoredVersion, filter func([]byte) ([]byte, int, int, error)) (*Rewrite, []byte, error) {
	rw := e.d.Rewrites
	removed := 0
	var latest []byte
	haveLatest, keepLatest, etag, latestID := false, false, "", ""
	for _, v := range versions {
		if v.DeleteMarker {
			continue
		}
		body, err := rw.GetVersion(ctx, e.d.Bucket, key, v.VersionID)
		if err != nil {
			return nil, nil, err
		}
		out, n, kept, err := filter(body)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", key, err)
		}
		removed += n
		if v.Latest {
			haveLatest, keepLatest, etag, latestID = true, n == 0, v.ETag, v.VersionID
			if kept > 0 {
				latest = out
			}
		}
	}
	if removed == 0 {
		return nil, nil, nil
	}
	if err := e.d.Store.Holds(ctx, e.s.Lease); err != nil {
		return nil, nil, err
	}
	r := &Rewrite{Store: store, Bucket: e.d.Bucket, Key: key, Removed: removed, VersionIDs: []string{}}
	if haveLatest && latest != nil && !keepLatest {
		id, err := rw.PutVersion(ctx, e.d.Bucket, key, latest, map[string]string{MetaRewrittenBy: e.s.Job.ID}, etag)
		if err != nil {
			return nil, nil, err
		}
		r.NewVersion = id
	}
	for _, v := range versions {
		if v.VersionID == r.NewVersion || keepLatest && v.VersionID == latestID {
			continue
		}
		if err := rw.DeleteVersion(ctx, e.d.Bucket, key, v.VersionID); err != nil {
			return nil, nil, err
		}
		r.VersionIDs = append(r.VersionIDs, v.VersionID)
	}
	return r, latest, nil
}

// byKey groups versions by object key, in listing order.
func byKey(vs []StoredVersion) ([]string, map[string][]StoredVersion) {
	var keys []string
	m := map[string][]StoredVersion{}
	for _, v := range vs {
		if _, ok := m[v.Key]; !ok {
			keys = append(keys, v.Key)
		}
		m[v.Key] = append(m[v.Key], v)
	}
	return keys, m
}

// archives rewrites the tenant's audit archive objects holding the
// subject's records. The archive is dated by event, not by subject, so
// every day of the tenant is read (LIST and GET, a bounded number of
// objects per step; the tenant's archivesDays retention bounds how many
// days there are). The days are found when the phase starts.
func (e *eraseStep) archives(ctx context.Context) (string, error) {
	if e.d.Rewrites == nil || len(e.d.ArchivePrefixes) == 0 {
		return "", nil
	}
	if e.cp.Cursor == "" {
		days, err := tenantDays(ctx, e.d.Rewrites, e.d.Bucket, e.d.ArchivePrefixes, e.s.Job.TenantID)
		if err != nil {
			return "", err
		}
		e.cp.Days, e.cp.Cursor = days, "listed"
	}
	budget := erasureRewritesPerStep
	for len(e.cp.Days) > 0 && budget > 0 {
		vs, err := e.d.Rewrites.ListVersions(ctx, e.d.Bucket, e.cp.Days[0])
		if err != nil {
			return "", err
		}
		keys, versions := byKey(vs)
		for _, k := range keys {
			r, _, err := e.rewriteObject(ctx, StoreArchive, k, versions[k], false)
			if err != nil {
				return "", err
			}
			if r != nil {
				e.cp.Rewrites = append(e.cp.Rewrites, *r)
			}
		}
		budget -= max(len(keys), 1)
		e.cp.Days = e.cp.Days[1:]
	}
	if len(e.cp.Days) > 0 {
		return e.cp.Cursor, nil
	}
	return "", nil
}

// tenantDays lists the tenant's archive day prefixes
// (<topic prefix><yyyy>/<mm>/<dd>/<tenant>/) under every archive topic.
func tenantDays(ctx context.Context, rw Rewrites, bucket string, tops []string, tenant string) ([]string, error) {
	var out []string
	for _, top := range tops {
		years, err := rw.Subprefixes(ctx, bucket, top)
		if err != nil {
			return nil, err
		}
		for _, y := range years {
			months, err := rw.Subprefixes(ctx, bucket, y)
			if err != nil {
				return nil, err
			}
			for _, m := range months {
				days, err := rw.Subprefixes(ctx, bucket, m)
				if err != nil {
					return nil, err
				}
				for _, d := range days {
					tenants, err := rw.Subprefixes(ctx, bucket, d)
					if err != nil {
						return nil, err
					}
					if slices.Contains(tenants, d+tenant+"/") {
						out = append(out, d+tenant+"/")
					}
				}
			}
		}
	}
	return out, nil
}

// exports rewrites the output of the tenant's exports, whatever their
// status: a failed or cancelled export's committed parts, and the orphans
// an attempt that crashed or was fenced out left, hold the subject as much
// as a finished one's. An export still running when the phase lists it is
// waited out first: its parts written before the erasure reached its
// events would otherwise be listed by its manifest afterwards (issue 32
// items 2 and 3). One listing page a step, then the waits.
func (e *eraseStep) exports(ctx context.Context) (bool, error) {
	if e.d.Rewrites == nil || e.d.Jobs == nil {
		return true, nil
	}
	if !e.cp.Listed {
		page, err := e.d.Jobs.List(ctx, jobs.ListParams{TenantID: e.s.Job.TenantID, Kind: KindExport, Limit: jobs.MaxListLimit, Cursor: e.cp.Cursor})
		if err != nil {
			return false, err
		}
		for _, j := range page.Jobs {
			if !j.Status.Terminal() {
				e.cp.Waiting = append(e.cp.Waiting, j.ID)
				continue
			}
			if err := e.export(ctx, j); err != nil {
				return false, err
			}
		}
		if page.Cursor != "" {
			e.cp.Cursor = page.Cursor
			return false, nil
		}
		e.cp.Listed, e.cp.Cursor = true, ""
	}
	waiting, err := e.waitJobs(ctx)
	if err != nil || waiting {
		return false, err
	}
	for _, id := range e.cp.Done {
		j, ok, err := e.d.Jobs.Get(ctx, id)
		if err != nil {
			return false, err
		}
		if ok {
			if err := e.export(ctx, j); err != nil {
				return false, err
			}
		}
	}
	e.cp.Done = nil
	return true, nil
}

// waitJobs looks at the jobs the phase waits for (running when it
// listed them; one started later reads what the erasure left): the ones
// that ended move to Done, and the step snoozes while any is left.
func (e *eraseStep) waitJobs(ctx context.Context) (bool, error) {
	var still []string
	for _, id := range e.cp.Waiting {
		j, ok, err := e.d.Jobs.Get(ctx, id)
		if err != nil {
			return false, err
		}
		switch {
		case !ok:
		case j.Status.Terminal():
			e.cp.Done = append(e.cp.Done, id)
		default:
			still = append(still, id)
		}
	}
	e.cp.Waiting = still
	if len(still) > 0 {
		e.snooze = e.poll()
		return true, nil
	}
	return false, nil
}

// export rewrites one export's output: every NDJSON object under its job's
// prefix (the parts of every attempt), then the manifest's counts and
// checksums when it has one.
func (e *eraseStep) export(ctx context.Context, j jobs.Job) error {
	vs, err := e.d.Rewrites.ListVersions(ctx, e.d.Bucket, jobs.ObjectPrefix+j.ID+"/")
	if err != nil {
		return err
	}
	keys, versions := byKey(vs)
	rewritten := map[string]*Rewrite{}
	bodies := map[string][]byte{}
	for _, k := range keys {
		gz := strings.HasSuffix(k, ".ndjson.gz")
		if !gz && !strings.HasSuffix(k, ".ndjson") {
			continue
		}
		r, body, err := e.rewriteObject(ctx, StoreExports, k, versions[k], gz)
		if err != nil {
			return err
		}
		if r != nil {
			e.cp.Rewrites = append(e.cp.Rewrites, *r)
			rewritten[k], bodies[k] = r, body
		}
	}
	if len(rewritten) == 0 {
		return nil
	}
	var res ExportResult
	if json.Unmarshal(j.Result, &res) != nil || res.ManifestKey == "" {
		return nil // no manifest: a failed or cancelled export
	}
	var latest *StoredVersion
	for i, v := range versions[res.ManifestKey] {
		if v.Latest && !v.DeleteMarker {
			latest = &versions[res.ManifestKey][i]
		}
	}
	if latest == nil {
		return nil // purged (retention) or never written
	}
	raw, err := e.d.Rewrites.GetVersion(ctx, e.d.Bucket, res.ManifestKey, latest.VersionID)
	if err != nil {
		return err
	}
	var m ExportManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("export %s: manifest: %w", j.ID, err)
	}
	changed := false
	for i, p := range m.Parts {
		r, ok := rewritten[p.Key]
		if !ok {
			continue
		}
		body := bodies[p.Key]
		changed = true
		m.Parts[i].Count -= min(p.Count, r.Removed)
		if p.Records == "events" {
			m.Events -= min(m.Events, r.Removed)
		} else {
			m.Incidents -= min(m.Incidents, r.Removed)
		}
		sum := sha256.Sum256(body)
		m.Bytes += len(body) - p.Bytes
		m.Parts[i].Bytes, m.Parts[i].SHA256 = len(body), hex.EncodeToString(sum[:])
		if body == nil {
			m.Parts[i].SHA256 = "" // nothing left: the part is gone
		}
	}
	if !changed {
		return nil
	}
	m.Parts = slices.DeleteFunc(m.Parts, func(p ExportPart) bool { return p.SHA256 == "" })
	m.Erasures = append(m.Erasures, ExportErasure{JobID: e.s.Job.ID, At: time.Now().UTC()})
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return jobs.Fail(jobs.CodeHandlerFailed, err)
	}
	if err := e.d.Store.Holds(ctx, e.s.Lease); err != nil {
		return err
	}
	_, err = e.d.Rewrites.PutVersion(ctx, e.d.Bucket, res.ManifestKey, body, map[string]string{MetaRewrittenBy: e.s.Job.ID}, "")
	return err
}
