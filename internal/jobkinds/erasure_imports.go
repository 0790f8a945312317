package jobkinds

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/subject"
)

// The files a tenant drops under imports/<tenant>/ hold records of many
// subjects (a CRM dump with their e-mails), and so do their error reports
// (<key>.errors.ndjson, and the import job's errors.ndjson parts under
// jobs/<import>/): the erasure rewrites them without the subject's records.
// An import running when the erasure starts is waited out first (it
// publishes the subject's records; the events phase then erases what it
// published), so no import reads a version the erasure deletes.
//
// A record of the subject becomes a blank line (line numbers keep their
// meaning: the error report refers to them; an importer skips blank
// lines); a Stripe list page loses the subject's events. The version the
// erasure writes names it in its metadata (MetaRewrittenBy): the S3
// notification it causes starts an import that imports nothing (its
// records came from the earlier version).

// StoreImports names the import files and their error reports in the
// evidence.
const StoreImports = "imports"

// MetaRewrittenBy is the user metadata naming the subject erasure that
// wrote an object's version (x-amz-meta-evp-rewritten-by).
const MetaRewrittenBy = "evp-rewritten-by"

// Bounds of an import file version the erasure rewrites in memory (its
// stored and its inflated bytes). A larger version that holds the subject
// is scanned as a stream and, a step being unable to rewrite gigabytes,
// its file is deleted whole (every version): it was imported already
// (running imports are waited out), the evidence says so, and the tenant
// can drop a file without the subject to import it again.
const (
	maxImportRewriteBytes = 32 << 20
	maxImportInflated     = 64 << 20
)

// errTooLarge: a version is over the in-memory bounds.
var errTooLarge = errors.New("too large to rewrite in a step")

// importPlace is a record's place in a file: its line and, in a Stripe
// list page, its index (-1: the whole line).
type importPlace struct {
	Line  int64
	Index int
}

// places are the subject's records found in a file, by line.
type places map[int64][]int

func (p places) add(line int64, index int) { p[line] = append(p[line], index) }

// has reports whether a report line about (line, index) is about one of
// them (index nil: the whole line).
func (p places) has(line int64, index *int) bool {
	idx, ok := p[line]
	if !ok {
		return false
	}
	if index == nil || slices.Contains(idx, -1) {
		return true
	}
	return slices.Contains(idx, *index)
}

// quotedID is id as a JSON string: a record holding it, whatever its
// shape, is about the subject (holdsID).
func quotedID(id string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(id)
	return bytes.TrimSpace(b.Bytes())
}

// holdsID reports whether raw holds the quoted id as a JSON string, or as
// one quoted inside another string (a message quoting it: \"id\").
func holdsID(raw, quoted []byte) bool {
	if bytes.Contains(raw, quoted) {
		return true
	}
	inner := quoted[1 : len(quoted)-1]
	return bytes.Contains(raw, append(append([]byte(`\"`), inner...), `\"`...))
}

// recordNames reports whether one import record (an envelope, a
// provider's event) is the subject's: it names id as its subject
// identifier (the envelope subject, a provider event's object or the
// owner its provider's rules read), or holds id as a JSON string anywhere
// (a record no import accepted is judged by its bytes).
func recordNames(raw []byte, id string, quoted []byte) bool {
	if holdsID(raw, quoted) {
		return true
	}
	var head struct {
		Object json.RawMessage `json:"object"`
		Data   struct {
			Object struct {
				ID string `json:"id"`
			} `json:"object"`
		} `json:"data"`
	}
	if json.Unmarshal(raw, &head) != nil {
		return false
	}
	if string(head.Object) == `"event"` {
		return head.Data.Object.ID == id || subject.OwnedBy(raw, id)
	}
	var ev envelope.Event
	if json.Unmarshal(raw, &ev) != nil {
		return false
	}
	return subject.Of(ev).Has(id)
}

// withoutImportRecords drops the subject's records from an import file's
// body (gzip when it starts with gzip's magic bytes, and written back so):
// each becomes a blank line, a Stripe list page keeps its other events.
// kept counts the records left.
func withoutImportRecords(body []byte, id string, found places) (out []byte, removed, kept int, err error) {
	gz := len(body) >= 2 && body[0] == 0x1f && body[1] == 0x8b
	if gz {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, 0, 0, err
		}
		if body, err = io.ReadAll(io.LimitReader(zr, maxImportInflated+1)); err != nil {
			return nil, 0, 0, err
		}
		if len(body) > maxImportInflated {
			return nil, 0, 0, errTooLarge
		}
	}
	quoted := quotedID(id)
	lines := bytes.Split(body, []byte{'\n'})
	var buf bytes.Buffer
	for i, line := range lines {
		if i > 0 {
			buf.WriteByte('\n')
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			buf.Write(line)
			continue
		}
		n := int64(i + 1)
		page, dropped, ok := withoutListEvents(trimmed, id, quoted)
		switch {
		case ok && len(dropped) == 0:
			kept += listLen(trimmed)
			buf.Write(line)
		case ok:
			removed += len(dropped)
			for _, d := range dropped {
				found.add(n, d)
			}
			if page != nil {
				kept += listLen(page)
				buf.Write(page)
			}
		case recordNames(trimmed, id, quoted):
			removed++
			found.add(n, -1)
		default:
			kept++
			buf.Write(line)
		}
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

// withoutListEvents takes the subject's events out of a Stripe list page
// line (ok false: the line is no list page): the page without them (nil
// when none is left) and their indexes.
func withoutListEvents(line []byte, id string, quoted []byte) (page []byte, dropped []int, ok bool) {
	var members map[string]json.RawMessage
	if json.Unmarshal(line, &members) != nil || string(members["object"]) != `"list"` {
		return nil, nil, false
	}
	var data []json.RawMessage
	if json.Unmarshal(members["data"], &data) != nil {
		return nil, nil, false
	}
	var keep []json.RawMessage
	for i, ev := range data {
		if recordNames(ev, id, quoted) {
			dropped = append(dropped, i)
			continue
		}
		keep = append(keep, ev)
	}
	if len(dropped) == 0 {
		return line, nil, true
	}
	if len(keep) == 0 {
		return nil, dropped, true
	}
	raw, err := json.Marshal(keep)
	if err != nil {
		return nil, nil, false
	}
	members["data"] = raw
	if page, err = json.Marshal(members); err != nil {
		return nil, nil, false
	}
	return page, dropped, true
}

// listLen is how many records a line holds: a list page's events, else 1.
func listLen(line []byte) int {
	var page struct {
		Object string            `json:"object"`
		Data   []json.RawMessage `json:"data"`
	}
	if json.Unmarshal(line, &page) == nil && page.Object == "list" {
		return len(page.Data)
	}
	return 1
}

// withoutReportLines drops from an error report (NDJSON of ImportError)
// the lines about the subject's records (found) or holding its id.
func withoutReportLines(body []byte, id string, found places) (out []byte, removed, kept int, err error) {
	quoted := quotedID(id)
	var buf bytes.Buffer
	for line := range bytes.SplitSeq(body, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e struct {
			Line  int64 `json:"line"`
			Index *int  `json:"index"`
		}
		if holdsID(line, quoted) || json.Unmarshal(line, &e) == nil && e.Line > 0 && found.has(e.Line, e.Index) {
			removed++
			continue
		}
		kept++
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), removed, kept, nil
}

// scanNames reads a version too large to hold as a stream and reports
// whether any record of it (a line; gzip inflated) is the subject's. A
// line longer than an import reads (MaxImportLineBytes) is judged by its
// bytes.
func scanNames(r io.Reader, id string) (bool, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return false, err
		}
		br = bufio.NewReaderSize(zr, 1<<20)
	}
	quoted := quotedID(id)
	var line, tail []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case long:
			if bytes.Contains(append(tail, chunk...), quoted) {
				return true, nil
			}
			tail = slices.Clone(chunk[max(0, len(chunk)-len(quoted)):])
		case len(line)+len(chunk) > MaxImportLineBytes:
			if bytes.Contains(append(line, chunk...), quoted) {
				return true, nil
			}
			long, line, tail = true, line[:0], slices.Clone(chunk[max(0, len(chunk)-len(quoted)):])
		default:
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if t := bytes.TrimSpace(line); !long && len(t) > 0 {
			if _, dropped, ok := withoutListEvents(t, id, quoted); ok && len(dropped) > 0 || !ok && recordNames(t, id, quoted) {
				return true, nil
			}
		}
		line, long = line[:0], false
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// imports waits out the tenant's running file imports, then rewrites its
// import files, their error reports and the imports' error report parts,
// a bounded number of files a step.
func (e *eraseStep) imports(ctx context.Context) (bool, error) {
	if e.d.Rewrites == nil || e.d.Jobs == nil {
		return true, nil
	}
	if !e.cp.Listed {
		// The tenant's imports, a listing page a step: the running ones
		// are waited out, and every one's report parts are its file's.
		page, err := e.d.Jobs.List(ctx, jobs.ListParams{TenantID: e.s.Job.TenantID, Kind: KindFileImport, Limit: jobs.MaxListLimit, Cursor: e.cp.Cursor})
		if err != nil {
			return false, err
		}
		for _, j := range page.Jobs {
			var a ImportArgs
			if json.Unmarshal(j.Args, &a) != nil || a.Key == "" {
				continue
			}
			if e.cp.ImportJobs == nil {
				e.cp.ImportJobs = map[string][]string{}
			}
			e.cp.ImportJobs[a.Key] = append(e.cp.ImportJobs[a.Key], j.ID)
			if !j.Status.Terminal() {
				e.cp.Waiting = append(e.cp.Waiting, j.ID)
			}
		}
		if page.Cursor != "" {
			e.cp.Cursor = page.Cursor
			return false, nil
		}
		vs, err := e.d.Rewrites.ListVersions(ctx, e.d.Bucket, ImportPrefix+e.s.Job.TenantID+"/")
		if err != nil {
			return false, err
		}
		files := map[string]bool{}
		for _, v := range vs {
			if Importable(v.Key) {
				files[v.Key] = true
			} else if f, ok := strings.CutSuffix(v.Key, ErrorReportSuffix); ok && Importable(f) {
				files[f] = true // a report whose file is gone
			}
		}
		for k := range e.cp.ImportJobs {
			files[k] = true // parts of an import whose file is gone
		}
		e.cp.Files = slices.Sorted(func(yield func(string) bool) {
			for k := range files {
				if !yield(k) {
					return
				}
			}
		})
		e.cp.Listed, e.cp.Cursor = true, ""
	}
	if waiting, err := e.waitJobs(ctx); err != nil || waiting {
		return false, err
	}
	budget := erasureRewritesPerStep
	for len(e.cp.Files) > 0 && budget > 0 {
		n, err := e.importFile(ctx, e.cp.Files[0])
		if errors.Is(err, errNewerUpload) {
			// The tenant uploaded the file again while it was rewritten:
			// its upload stays current (the rewrite is conditional). Its
			// S3 notification starts an import of it: after a poll the
			// phase lists the tenant's imports again, waits out the
			// running ones, and goes over the files again, the new upload
			// among them.
			e.cp.Listed, e.cp.Cursor, e.cp.Waiting, e.cp.Done, e.cp.Files, e.cp.ImportJobs = false, "", nil, nil, nil, nil
			e.snooze = e.poll()
			return false, nil
		}
		if err != nil {
			return false, err
		}
		budget -= max(n, 1)
		e.cp.Files = e.cp.Files[1:]
	}
	return len(e.cp.Files) == 0, nil
}

// errNewerUpload: a version of an import file (or its report) was written
// while the erasure rewrote it.
var errNewerUpload = errors.New("a newer version was uploaded while the file was rewritten")

// newer reports whether key has a version the erasure neither read
// (versions) nor wrote (r's new version): one uploaded since the listing.
func (e *eraseStep) newer(ctx context.Context, key string, versions []StoredVersion, r *Rewrite) (bool, error) {
	vs, err := e.d.Rewrites.ListVersions(ctx, e.d.Bucket, key)
	if err != nil {
		return false, err
	}
	for _, v := range vs {
		if v.Key != key || r != nil && v.VersionID == r.NewVersion {
			continue
		}
		if !slices.ContainsFunc(versions, func(seen StoredVersion) bool { return seen.VersionID == v.VersionID }) {
			return true, nil
		}
	}
	return false, nil
}

// importFile rewrites one import file (every version), its report and its
// imports' report parts without the subject's records; n is how many
// objects it read.
func (e *eraseStep) importFile(ctx context.Context, key string) (n int, err error) {
	rw := e.d.Rewrites
	found := places{}
	vs, err := rw.ListVersions(ctx, e.d.Bucket, key)
	if err != nil {
		return 0, err
	}
	_, versions := byKey(vs)
	file := versions[key]
	n += len(file)
	big := false
	for _, v := range file {
		big = big || !v.DeleteMarker && v.Size > maxImportRewriteBytes
	}
	var r *Rewrite
	if !big {
		r, _, err = e.rewriteWith(ctx, StoreImports, key, file, func(body []byte) ([]byte, int, int, error) {
			return withoutImportRecords(body, e.subject, found)
		})
		big = errors.Is(err, errTooLarge)
		if errors.Is(err, ErrObjectChanged) {
			return n, errNewerUpload
		}
		if err != nil && !big {
			return n, err
		}
	}
	if big {
		if r, err = e.eraseLargeImport(ctx, key, file); err != nil {
			return n, err
		}
	}
	// A version uploaded after the listing (the same bytes as the one
	// read, so the conditional write did not see it; or after the new
	// version was written) may hold the subject: go over the file again.
	if again, err := e.newer(ctx, key, file, r); err != nil || again {
		if r != nil {
			e.cp.Rewrites = append(e.cp.Rewrites, *r)
		}
		if err == nil {
			err = errNewerUpload
		}
		return n, err
	}
	if r != nil {
		e.cp.Rewrites = append(e.cp.Rewrites, *r)
	}
	// The report next to the file, and the parts of its imports' reports.
	report := func(body []byte) ([]byte, int, int, error) { return withoutReportLines(body, e.subject, found) }
	reports := []string{key + ErrorReportSuffix}
	for _, id := range e.cp.ImportJobs[key] {
		pvs, err := rw.ListVersions(ctx, e.d.Bucket, jobs.ObjectPrefix+id+"/")
		if err != nil {
			return n, err
		}
		for _, v := range pvs {
			if strings.HasSuffix(v.Key, "errors.ndjson") && !slices.Contains(reports, v.Key) {
				reports = append(reports, v.Key)
			}
		}
	}
	sort.Strings(reports[1:])
	for _, k := range reports {
		rvs, err := rw.ListVersions(ctx, e.d.Bucket, k)
		if err != nil {
			return n, err
		}
		_, rversions := byKey(rvs)
		n += len(rversions[k])
		r, _, err := e.rewriteWith(ctx, StoreImports, k, rversions[k], report)
		if errors.Is(err, ErrObjectChanged) {
			return n, errNewerUpload // an import of a newer upload wrote it
		}
		if err != nil {
			return n, err
		}
		if r != nil {
			e.cp.Rewrites = append(e.cp.Rewrites, *r)
		}
	}
	return n, nil
}

// eraseLargeImport scans the versions of a file too large to rewrite in a
// step and, when one holds the subject's records, deletes the file whole
// (every version, by id); nil when none does.
func (e *eraseStep) eraseLargeImport(ctx context.Context, key string, versions []StoredVersion) (*Rewrite, error) {
	hit := false
	for _, v := range versions {
		if v.DeleteMarker || hit {
			continue
		}
		body, err := e.d.Rewrites.OpenVersion(ctx, e.d.Bucket, key, v.VersionID)
		if err != nil {
			return nil, err
		}
		hit, err = scanNames(body, e.subject)
		body.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	if !hit {
		return nil, nil
	}
	if err := e.d.Store.Holds(ctx, e.s.Lease); err != nil {
		return nil, err
	}
	// The versions read, by id: a version uploaded since is not deleted
	// unread (the caller looks at it).
	r := &Rewrite{Store: StoreImports, Bucket: e.d.Bucket, Key: key, VersionIDs: []string{},
		Reason: fmt.Sprintf("a version is over %d bytes, too large to rewrite in a step: the file (imported already) is deleted whole", maxImportRewriteBytes)}
	for _, v := range versions {
		if err := e.d.Rewrites.DeleteVersion(ctx, e.d.Bucket, key, v.VersionID); err != nil {
			return nil, err
		}
		r.VersionIDs = append(r.VersionIDs, v.VersionID)
	}
	return r, nil
}
