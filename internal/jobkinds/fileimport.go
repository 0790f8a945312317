package jobkinds

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/truncate"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// KindFileImport is the file import's kind name (spec 003 file-drop-run).
const KindFileImport = "file-import"

// ImportPrefix is where tenants' import files go: imports/<tenant>/….
const ImportPrefix = topology.ImportsPrefix

// ErrorReportSuffix names a file's error report: the file's key plus it,
// next to the file. Keys ending in it are never imported.
const ErrorReportSuffix = ".errors.ndjson"

// MaxImportFileBytes is the largest file an import reads (5 GiB, S3's
// largest single PUT).
const MaxImportFileBytes = 5 << 30

// MaxReportedErrors bounds the error report's lines (every rejection is
// counted in the result; past this many the report ends with a line
// saying how many more there were).
const MaxReportedErrors = 100_000

// Failure codes of a file import.
const (
	CodeFileNotFound = "file_not_found"
	CodeFileTooLarge = "file_too_large"
	CodeFileChanged  = "file_changed"
	CodeInvalidGzip  = "invalid_gzip"
)

// ImportArgs name the file: its key (imports/<tenant>/…) and, optionally,
// the version to read (an S3 notification names the version it is about;
// without one the import pins the version current at its first step).
type ImportArgs struct {
	Key       string `json:"key"`
	VersionID string `json:"versionId,omitempty"`
}

// ImportResult is the job's result: Read records (non-blank lines, each
// event of a Stripe list page one record) = Accepted (stored) +
// Duplicates (already stored: a re-run, a record repeated) + Rejected
// (each in the report, ReportKey; Unreported past MaxReportedErrors).
type ImportResult struct {
	Key        string `json:"key"`
	VersionID  string `json:"versionId,omitempty"`
	Bytes      int64  `json:"bytes"`
	Gzip       bool   `json:"gzip"`
	Read       int64  `json:"read"`
	Accepted   int64  `json:"accepted"`
	Duplicates int64  `json:"duplicates"`
	Rejected   int64  `json:"rejected"`
	ReportKey  string `json:"reportKey,omitempty"`
	Unreported int64  `json:"unreported,omitempty"`
	// RewrittenBy names the subject erasure that wrote the version: its
	// records were imported from the version before, so the import reads
	// nothing (the notification of the erasure's write starts it).
	RewrittenBy string `json:"rewrittenBy,omitempty"`
}

type importCheckpoint struct {
	Started bool   `json:"started"`
	ETag    string `json:"etag,omitempty"`
	// Offset is the file offset the next step reads from: the next line
	// (plain) or the start of the gzip member it is in (gzip, Inflated
	// bytes into it).
	Offset   int64 `json:"offset"`
	Inflated int64 `json:"inflated,omitempty"`
	// Mark is the last DEFLATE block boundary before Inflated (gzip, when
	// there is one past the member's start): the next step decodes from
	// it, not from the member's start.
	Mark     *gzipMark `json:"mark,omitempty"`
	Lines    int64     `json:"lines"`
	EOF      bool      `json:"eof,omitempty"`
	Parts    []string  `json:"parts,omitempty"` // error report parts
	Reported int64     `json:"reported,omitempty"`
	// Acked are the records ("line.index") of the batch at Offset that an
	// attempt which then failed had stored: that attempt counted nothing,
	// so the retry counts them accepted, not duplicates (a fresh file
	// shows no duplicates however often a batch is retried).
	Acked []string `json:"acked,omitempty"`
	ImportResult
}

// ImportOptions tune the steps (zero: the defaults).
type ImportOptions struct {
	// Concurrency is how many ingest calls run at once (default 16);
	// records of one ordering key are published in file order.
	Concurrency int
	// StepRecords and StepBudget bound one step (default 20,000 records,
	// 40 s): the checkpoint commits after them.
	StepRecords int
	StepBudget  time.Duration
	// BatchRecords are read, published and counted together (default
	// 1024).
	BatchRecords int
	// InvokeRecords is how many records one ingest call carries (default
	// 25, at most envelope.MaxBatch): a lane's records go in calls of up
	// to this many.
	InvokeRecords int
}

func (o ImportOptions) withDefaults() ImportOptions {
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.StepRecords <= 0 {
		o.StepRecords = 20_000
	}
	if o.StepBudget <= 0 {
		o.StepBudget = 40 * time.Second
	}
	if o.BatchRecords <= 0 {
		o.BatchRecords = 1024
	}
	if o.InvokeRecords <= 0 {
		o.InvokeRecords = 25
	}
	o.InvokeRecords = min(o.InvokeRecords, envelope.MaxBatch)
	return o
}

// ImportBlobs reads the error report's parts back.
type ImportBlobs interface {
	ImportObjects
	Get(ctx context.Context, bucket, key string) ([]byte, error)
}

// FileImportDeps are the file import's ports.
type FileImportDeps struct {
	Objects ImportBlobs
	// StripeFor is the webhook adapter's canonicalizer attributing to
	// tenant what names no tenant of its own.
	StripeFor func(tenant string) Canonicalizer
	Ingest    BatchPublisher
	Bucket    string
	Options   ImportOptions
}

// ImportTenant is the tenant an import key belongs to: imports/<tenant>/….
func ImportTenant(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, ImportPrefix)
	if !ok {
		return "", false
	}
	t, name, ok := strings.Cut(rest, "/")
	if !ok || !envelope.ValidTenant(t) || name == "" {
		return "", false
	}
	return t, true
}

// Importable reports whether key is a file an import reads (not a
// "folder", not an error report).
func Importable(key string) bool {
	_, ok := ImportTenant(key)
	return ok && !strings.HasSuffix(key, "/") && !strings.HasSuffix(key, ErrorReportSuffix)
}

func (a ImportArgs) check() error {
	switch {
	case a.Key == "" || len(a.Key) > 1024 || !utf8.ValidString(a.Key):
		return &jobs.RequestError{Code: jobs.CodeInvalidArgs, Message: "key must be the file's S3 key (1 to 1024 bytes of UTF-8)"}
	case !Importable(a.Key):
		return &jobs.RequestError{Code: jobs.CodeInvalidArgs, Message: "key must be a file under imports/<tenant>/ (not a folder, not an " + ErrorReportSuffix + " report)"}
	case len(a.VersionID) > 1024 || strings.ContainsFunc(a.VersionID, func(r rune) bool { return r < 0x21 || r > 0x7e }):
		return &jobs.RequestError{Code: jobs.CodeInvalidArgs, Message: "versionId must be an S3 version id"}
	}
	return nil
}

// FileImportKind describes file-import (FileImport runs it).
var FileImportKind = jobs.Kind{
	Name:        KindFileImport,
	StepTimeout: 2 * time.Minute,
	MaxAttempts: 8,
	// The job is how the retention expiry finds the import's report
	// parts (jobs/<import>/…).
	KeepFor: ImportsKeptFor,
	CheckArgs: func(raw json.RawMessage) error {
		var a ImportArgs
		if err := strictArgs(raw, &a); err != nil {
			return err
		}
		return a.check()
	},
	CheckTenant: func(tenant string, raw json.RawMessage) error {
		var a ImportArgs
		_ = json.Unmarshal(raw, &a)
		if t, _ := ImportTenant(a.Key); t != tenant {
			return &jobs.RequestError{Code: jobs.CodeInvalidArgs, Message: fmt.Sprintf("%s is tenant %s's file: an import writes only the tenant its path names", a.Key, t)}
		}
		return nil
	},
}

// FileImport builds the file-import kind: a file of NDJSON (plain or gzip)
// under imports/<tenant>/ read in bounded steps from a byte-offset
// checkpoint with ranged reads, each record published through ingest.
// Bad records never stop it: each goes to the error report next to the
// file. Re-reading records (a re-run, a step retried after a crash)
// publishes nothing twice: ingest dedupes by the record's id (a derived
// one for an envelope without, see DerivedIDPrefix).
func FileImport(d FileImportDeps) jobs.Kind {
	opt := d.Options.withDefaults()
	return FileImportKind.With(
		jobs.HandlerFunc(func(ctx context.Context, s jobs.Step) (jobs.Outcome, error) {
			return importStep(ctx, d, opt, s)
		}),
	)
}

func importStep(ctx context.Context, d FileImportDeps, opt ImportOptions, s jobs.Step) (jobs.Outcome, error) {
	var a ImportArgs
	if err := s.Args(&a); err != nil {
		return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
	}
	tenant := s.Job.TenantID
	if t, _ := ImportTenant(a.Key); t != tenant {
		return jobs.Outcome{}, jobs.Fail(CodeTenantMismatch, fmt.Errorf("%s is not a file of tenant %s", a.Key, tenant))
	}
	if d.Objects == nil || d.Ingest == nil {
		return jobs.Outcome{}, jobs.Fail("imports_not_configured", errors.New("this function has no file import ports (bucket, ingest)"))
	}
	var cp importCheckpoint
	if err := s.Resume(&cp); err != nil {
		return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
	}
	if cp.EOF {
		return finishImport(ctx, d, s, cp)
	}
	if !cp.Started {
		if err := startImport(ctx, d, a, &cp); err != nil {
			return jobs.Outcome{}, err
		}
		if cp.RewrittenBy != "" {
			return jobs.Done(cp.ImportResult), nil
		}
	}
	var canon Canonicalizer
	if d.StripeFor != nil {
		canon = d.StripeFor(tenant)
	}
	parser := recordParser{tenant: tenant, stripe: canon}
	rp := RangeParams{Bucket: d.Bucket, Key: a.Key, VersionID: cp.VersionID}
	if rp.VersionID == "" {
		rp.ETag = cp.ETag
	}
	from := cp.Offset
	if cp.Gzip && cp.Mark != nil {
		from = cp.Mark.Bit / 8
	}
	src := &rangeReader{ctx: ctx, obj: d.Objects, p: rp, off: from, size: cp.Bytes}
	defer src.Close()

	var (
		decoded io.Reader = src
		gz      *gzipStream
		pos     = cp.Offset // decoded position of the next unread line
		err     error
	)
	if cp.Gzip {
		// From the last block boundary before the next line (a few KiB
		// to decode and drop), else from its member's start.
		skip := cp.Inflated
		if cp.Mark != nil {
			gz, err = resumeGzipStream(src, cp.Offset, *cp.Mark)
			skip -= cp.Mark.Out
		} else {
			gz, err = newGzipStream(src, cp.Offset)
		}
		if err != nil {
			return jobs.Outcome{}, readFailure(err)
		}
		if _, err := io.CopyN(io.Discard, gz, skip); err != nil {
			return jobs.Outcome{}, readFailure(err)
		}
		decoded, pos = gz, skip
	}
	lr := &lineReader{br: bufio.NewReaderSize(decoded, 256<<10), max: MaxImportLineBytes}

	stop := time.Now().Add(opt.StepBudget)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-15*time.Second).Before(stop) {
		stop = dl.Add(-15 * time.Second)
	}
	// Publishing stops 10 s before the step must end, so a batch cut short
	// still leaves time to commit what the step did.
	pctx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		pctx, cancel = context.WithDeadline(ctx, dl.Add(-10*time.Second))
		defer cancel()
	}
	acked := make(map[string]bool, len(cp.Acked))
	for _, k := range cp.Acked {
		acked[k] = true
	}
	var report []ImportError
	records := 0
	for {
		linesBefore := cp.Lines
		batch, n, eof, readErr := readBatch(ctx, lr, parser, &cp, min(opt.BatchRecords, opt.StepRecords-records))
		if readErr != nil && len(batch) == 0 {
			return jobs.Outcome{}, readFailure(readErr)
		}
		results, err := publishBatch(pctx, d.Ingest, batch, opt)
		if err != nil {
			// The batch is not committed: the next step reads it again from
			// the offset before it (ingest dedupes what was published). What
			// this attempt stored is remembered so the retry counts it
			// accepted; the batches before it commit now, not with a retry
			// of the whole step.
			cp.Lines = linesBefore
			stored := false
			for i, r := range batch {
				if st := results[i].Status; r.rej == nil && (st == envelope.StatusEnqueued || st == envelope.StatusAccepted) {
					acked[ackKey(r)], stored = true, true
				}
			}
			if records == 0 && !stored {
				return jobs.Outcome{}, err
			}
			cp.Acked = slices.Sorted(maps.Keys(acked))
			break
		}
		for i, r := range batch {
			cp.Read++
			rej := r.rej
			if rej == nil {
				switch res := results[i]; res.Status {
				case envelope.StatusEnqueued, envelope.StatusAccepted:
					cp.Accepted++
				case envelope.StatusDuplicate:
					if acked[ackKey(r)] {
						cp.Accepted++ // stored by an attempt that failed
					} else {
						cp.Duplicates++
					}
				case envelope.StatusUnrouted:
					rej = &ImportError{Line: r.line, ID: r.id, Code: CodeUnrouted, Message: "no route takes this event's type: nothing was stored"}
				default:
					rej = &ImportError{Line: r.line, ID: r.id, Code: "rejected", Message: "ingest rejected the record"}
					if res.Error != nil {
						rej.Code, rej.Message, rej.Field = string(res.Error.Code), res.Error.Message, res.Error.Field
					}
				}
				if rej != nil && r.index >= 0 {
					idx := r.index
					rej.Index = &idx
				}
			}
			if rej != nil {
				cp.Rejected++
				rej.Message = truncate.String(rej.Message, 500)
				if cp.Reported+int64(len(report)) < MaxReportedErrors {
					report = append(report, *rej)
				}
			}
		}
		if len(acked) > 0 {
			acked, cp.Acked = map[string]bool{}, nil // the batch they were in is counted
		}
		pos += n
		records += len(batch)
		if eof {
			cp.EOF = true
			break
		}
		// A read error after some records: those are committed now, the
		// next step meets the error first thing.
		if readErr != nil || records >= opt.StepRecords || time.Now().After(stop) || ctx.Err() != nil {
			break
		}
	}
	if len(report) > 0 {
		key := s.Scope + "errors.ndjson"
		if err := d.Objects.Put(ctx, d.Bucket, key, ndjson(report)); err != nil {
			return jobs.Outcome{}, err
		}
		cp.Parts = append(cp.Parts, key)
		cp.Reported += int64(len(report))
	}
	done := pos
	if gz != nil {
		cp.Offset, cp.Inflated, cp.Mark = gz.position(pos)
		done = gz.compressedRead()
	} else {
		cp.Offset = pos
	}
	if cp.EOF {
		done = cp.Bytes
		cp.Mark = nil // its window is the file's content: not kept past the end
	}
	return jobs.Continue(cp).WithProgress(importProgress(cp, min(done, cp.Bytes))), nil
}

// startImport pins the file's version (or ETag) and size and sniffs gzip
// by its magic bytes (whatever the key's suffix).
func startImport(ctx context.Context, d FileImportDeps, a ImportArgs, cp *importCheckpoint) error {
	info, err := d.Objects.Stat(ctx, d.Bucket, a.Key, a.VersionID)
	switch {
	case errors.Is(err, ErrNoSuchObject):
		return jobs.Fail(CodeFileNotFound, fmt.Errorf("no file %s (version %q) in the bucket", a.Key, a.VersionID))
	case err != nil:
		return err
	case info.Size > MaxImportFileBytes:
		return jobs.Fail(CodeFileTooLarge, fmt.Errorf("%s is %d bytes; an import reads at most %d", a.Key, info.Size, int64(MaxImportFileBytes)))
	}
	cp.Started, cp.Key, cp.VersionID, cp.ETag, cp.Bytes = true, a.Key, info.VersionID, info.ETag, info.Size
	if cp.RewrittenBy = info.Metadata[MetaRewrittenBy]; cp.RewrittenBy != "" {
		return nil
	}
	if info.Size >= 2 {
		rp := RangeParams{Bucket: d.Bucket, Key: a.Key, VersionID: info.VersionID, Offset: 0, Length: 2}
		if rp.VersionID == "" {
			rp.ETag = info.ETag
		}
		body, err := d.Objects.ReadRange(ctx, rp)
		if err != nil {
			return readFailure(err)
		}
		magic := make([]byte, 2)
		_, err = io.ReadFull(body, magic)
		body.Close()
		if err != nil {
			return err
		}
		cp.Gzip = magic[0] == 0x1f && magic[1] == 0x8b
	}
	return nil
}

// readBatch reads lines until it has up to max records or the file ends:
// the records, the bytes of the decoded stream they took, and whether the
// file ended.
func readBatch(ctx context.Context, lr *lineReader, p recordParser, cp *importCheckpoint, max int) (batch []importRecord, n int64, eof bool, err error) {
	for len(batch) < max {
		line, taken, tooLong, err := lr.next()
		if errors.Is(err, io.EOF) {
			return batch, n, true, nil
		}
		if err != nil {
			return batch, n, false, err
		}
		cp.Lines++
		n += taken
		switch {
		case tooLong:
			batch = append(batch, p.reject(cp.Lines, -1, "", CodeLineTooLong, "", "the line is longer than %d bytes", MaxImportLineBytes))
		case len(bytes.TrimSpace(line)) == 0:
			// blank lines are not records
		default:
			// The line is the reader's buffer: the batch keeps a copy.
			batch = append(batch, p.parse(ctx, cp.Lines, bytes.Clone(line))...)
		}
	}
	return batch, n, false, nil
}

// publishBatch publishes a batch's records through ingest, opt.Concurrency
// lanes at a time, a lane's records opt.InvokeRecords to a call; the
// records of one ordering key (a Stripe event's customer, an envelope's
// subject; none: the tenant's whole sequence) share a lane and go one call
// after the other in file order, so a FIFO topic's message group gets
// them in the file's order. It returns the
// results of the records that were published and, when one could not be,
// the first such failure (the lanes stop then).
func publishBatch(ctx context.Context, ingest BatchPublisher, batch []importRecord, opt ImportOptions) ([]envelope.Result, error) {
	results := make([]envelope.Result, len(batch))
	lanes := make([][]int, opt.Concurrency)
	for i, r := range batch {
		if r.rej != nil {
			continue
		}
		h := fnv.New32a()
		_, _ = h.Write([]byte(r.lane))
		l := int(h.Sum32() % uint32(opt.Concurrency))
		lanes[l] = append(lanes[l], i)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, lane := range lanes {
		if len(lane) > 0 {
			wg.Go(func() { publishLane(ctx, cancel, ingest, batch, lane, opt.InvokeRecords, results) })
		}
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return results, err // with the results of the records that were published
	}
	return results, nil
}

// maxInvokeBytes bounds one batch call's envelopes, under Lambda's 6 MB
// synchronous request limit.
const maxInvokeBytes = 5 << 20

// publishLane publishes a lane's records in calls of up to per records
// (and maxInvokeBytes), one call after another. A call that fails, or a
// record ingest could not store (Retry), stops the lane and cancels the
// others with the failure; the results of the call's other records are
// kept.
func publishLane(ctx context.Context, cancel context.CancelCauseFunc, bp BatchPublisher, batch []importRecord, lane []int, per int, results []envelope.Result) {
	for start := 0; start < len(lane); {
		if ctx.Err() != nil {
			return
		}
		end, size := start, 0
		for end < len(lane) && end-start < per && (end == start || size+len(batch[lane[end]].raw) <= maxInvokeBytes) {
			size += len(batch[lane[end]].raw) + 1
			end++
		}
		call := lane[start:end]
		raws := make([][]byte, len(call))
		for k, i := range call {
			raws[k] = batch[i].raw
		}
		res, err := bp.PublishBatch(ctx, raws)
		if err != nil {
			first := batch[call[0]]
			cancel(fmt.Errorf("publish lines %d.. (%d records, from %s): %w", first.line, len(call), first.id, err))
			return
		}
		var failed error
		for k, i := range call {
			if res[k].Retry != "" {
				if failed == nil {
					failed = fmt.Errorf("publish line %d (%s): ingest did not store it: %s", batch[i].line, batch[i].id, res[k].Retry)
				}
				continue
			}
			results[i] = res[k].Result
		}
		if failed != nil {
			cancel(failed)
			return
		}
		start = end
	}
}

// ackKey names a record by its place in the file (line, index in a
// Stripe page): an id may repeat in a file, a place does not.
func ackKey(r importRecord) string { return fmt.Sprintf("%d.%d", r.line, r.index) }

// finishImport writes the error report next to the file from the steps'
// parts and completes the job.
func finishImport(ctx context.Context, d FileImportDeps, s jobs.Step, cp importCheckpoint) (jobs.Outcome, error) {
	res := cp.ImportResult
	if cp.Rejected > 0 {
		var buf bytes.Buffer
		for _, k := range cp.Parts {
			b, err := d.Objects.Get(ctx, d.Bucket, k)
			if err != nil {
				return jobs.Outcome{}, fmt.Errorf("error report part %s: %w", k, err)
			}
			buf.Write(b)
		}
		res.Unreported = cp.Rejected - cp.Reported
		if res.Unreported > 0 {
			fmt.Fprintf(&buf, `{"truncated":true,"reported":%d,"unreported":%d}`+"\n", cp.Reported, res.Unreported)
		}
		res.ReportKey = res.Key + ErrorReportSuffix
		if err := d.Objects.Put(ctx, d.Bucket, res.ReportKey, buf.Bytes()); err != nil {
			return jobs.Outcome{}, err
		}
	}
	return jobs.Done(res).WithProgress(importProgress(cp, cp.Bytes)), nil
}

func importProgress(cp importCheckpoint, done int64) jobs.Progress {
	return jobs.Progress{Done: done, Total: cp.Bytes, Unit: "bytes", Counts: map[string]int64{
		"read": cp.Read, "accepted": cp.Accepted, "duplicates": cp.Duplicates, "rejected": cp.Rejected,
	}}
}

// readFailure turns a read error into the step's outcome: a corrupt gzip
// or a file replaced under the import fail the job; anything else is
// transient.
func readFailure(err error) error {
	switch {
	case errors.Is(err, errInvalidGzip):
		return jobs.Fail(CodeInvalidGzip, err)
	case errors.Is(err, ErrObjectChanged), errors.Is(err, ErrNoSuchObject):
		return jobs.Fail(CodeFileChanged, fmt.Errorf("the file changed or went away during the import (a new upload starts its own): %w", err))
	}
	return err
}

func ndjson(lines []ImportError) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, l := range lines {
		_ = enc.Encode(l)
	}
	return buf.Bytes()
}
