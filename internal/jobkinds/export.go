package jobkinds

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/retention"
)

// KindExport is the tenant export's kind name.
const KindExport = "tenant-export"

// ExportSource reads what an export copies.
type ExportSource interface {
	// ListTenant pages a tenant's events, newest first (the index's
	// projection: no payloads).
	ListTenant(ctx context.Context, q operator.TenantQuery) ([]ledger.Record, string, error)
	// Record reads one whole event.
	Record(ctx context.Context, key string) (ledger.Record, error)
	// List pages incidents.
	List(ctx context.Context, f incident.Filter) (incident.Page, error)
}

// Objects writes export objects.
type Objects interface {
	Put(ctx context.Context, bucket, key string, body []byte) error
}

// ExportArgs are a tenant export's args; Since/Until bound the events'
// acceptance time and the incidents' last failure (RFC 3339; empty:
// unbounded).
type ExportArgs struct {
	Since string `json:"since,omitempty"`
	Until string `json:"until,omitempty"`
	// PageSize is how many records one step reads (1..1000, default
	// 500).
	PageSize int `json:"pageSize,omitempty"`
	// PartBytes is the most NDJSON one part holds before it is written
	// and the next begins (64 KiB..64 MiB, default ExportPartBytes): a
	// step holds one part at a time, so its memory is bounded by bytes,
	// not by how many records a page has or how large they are.
	PartBytes int `json:"partBytes,omitempty"`
}

// Part sizes (ExportArgs.PartBytes).
const (
	ExportPartBytes    = 8 << 20
	MinExportPartBytes = 64 << 10
	MaxExportPartBytes = 64 << 20
)

// ExportPart is one written part, as the manifest lists it.
type ExportPart struct {
	Key     string `json:"key"`
	Records string `json:"records"` // "events" or "incidents"
	Count   int    `json:"count"`
	Bytes   int    `json:"bytes"`
	SHA256  string `json:"sha256"`
}

// ExportManifest is the export's manifest object.
type ExportManifest struct {
	JobID     string       `json:"jobId"`
	TenantID  string       `json:"tenantId"`
	Since     string       `json:"since,omitempty"`
	Until     string       `json:"until,omitempty"`
	Events    int          `json:"events"`
	Incidents int          `json:"incidents"`
	Bytes     int          `json:"bytes"`
	Parts     []ExportPart `json:"parts"`
	CreatedAt time.Time    `json:"createdAt"`
	// ExpiresAt is when the tenant's retention policy (exportsDays)
	// deletes the export (the daily retention expiry); none when kept.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// Erasures are the subject erasures that rewrote parts of it since
	// (counts and checksums above are after them).
	Erasures []ExportErasure `json:"erasures,omitempty"`
}

// ExportErasure names an erasure that rewrote an export.
type ExportErasure struct {
	JobID string    `json:"jobId"`
	At    time.Time `json:"at"`
}

// ExportResult is the job's result.
type ExportResult struct {
	Events      int    `json:"events"`
	Incidents   int    `json:"incidents"`
	ManifestKey string `json:"manifestKey"`
	// ExpiresAt is when the tenant's retention policy deletes the export
	// (its exportsDays, applied by the retention expiry); none when the
	// tenant keeps exports.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

type exportCheckpoint struct {
	Phase     string       `json:"phase"` // events, incidents
	Cursor    string       `json:"cursor,omitempty"`
	Parts     []ExportPart `json:"parts,omitempty"`
	Events    int          `json:"events"`
	Incidents int          `json:"incidents"`
}

// ExportDeps are the export's ports: the tenant's events and incidents,
// their claim-checked payloads, where the parts go, and the tenant's
// retention policy (nil: the export's expiry is not said).
type ExportDeps struct {
	Source   ExportSource
	Payloads claimcheck.Store
	Objects  Objects
	Bucket   string
	Policies Policies
}

// ExportKind describes tenant-export (Export runs it).
var ExportKind = jobs.Kind{
	Name:        KindExport,
	StepTimeout: 2 * time.Minute,
	// The job is how the retention expiry finds the export's objects:
	// it outlives the longest export retention a tenant may set.
	KeepFor: ExportsKeptFor,
	CheckArgs: func(raw json.RawMessage) error {
		var a ExportArgs
		if err := strictArgs(raw, &a); err != nil {
			return err
		}
		if _, _, err := a.bounds(); err != nil {
			return err
		}
		if a.PageSize < 0 || a.PageSize > 1000 {
			return &jobs.RequestError{Code: jobs.CodeInvalidArgs, Message: "pageSize must be 1..1000"}
		}
		if a.PartBytes != 0 && (a.PartBytes < MinExportPartBytes || a.PartBytes > MaxExportPartBytes) {
			return &jobs.RequestError{Code: jobs.CodeInvalidArgs, Message: fmt.Sprintf("partBytes must be %d..%d", MinExportPartBytes, MaxExportPartBytes)}
		}
		return nil
	},
}

// Export builds the tenant-export kind: one page of events, then of
// incidents, per step, each written as a gzip NDJSON part under the step's
// attempt scope (a part becomes the export's only when the step's
// checkpoint commits, so a crashed or fenced-out attempt leaves at most an
// orphan object, never a duplicate record), then the manifest.
//
// The tenant's retention policy sets how long an export is kept
// (exportsDays): the manifest and the result say until when, and the
// retention expiry deletes it then (policies nil: not said).
func Export(d ExportDeps) jobs.Kind {
	src, payloads, objects, bucket, policies := d.Source, d.Payloads, d.Objects, d.Bucket, d.Policies
	return ExportKind.With(
		jobs.HandlerFunc(func(ctx context.Context, s jobs.Step) (jobs.Outcome, error) {
			var a ExportArgs
			if err := s.Args(&a); err != nil {
				return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
			}
			since, until, _ := a.bounds()
			page := a.PageSize
			if page == 0 {
				page = 500
			}
			cp := exportCheckpoint{Phase: "events"}
			if err := s.Resume(&cp); err != nil {
				return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
			}
			limit := a.PartBytes
			if limit == 0 {
				limit = ExportPartBytes
			}
			w := &partWriter{ctx: ctx, objects: objects, bucket: bucket, scope: s.Scope, records: cp.Phase, limit: limit, parts: &cp.Parts}
			var next string
			switch cp.Phase {
			case "events":
				recs, cursor, err := src.ListTenant(ctx, operator.TenantQuery{TenantID: s.Job.TenantID, Since: since, Until: until, Limit: page, Cursor: cp.Cursor})
				if err != nil {
					return jobs.Outcome{}, err
				}
				next = cursor
				for _, r := range recs {
					// One record in memory at a time: read, rehydrate,
					// encode into the part, let go.
					if r, err = src.Record(ctx, r.Key); errors.Is(err, ledger.ErrNotFound) {
						continue // expired since the listing
					} else if err != nil {
						return jobs.Outcome{}, err
					}
					ev := r.Event
					if ev.PayloadRef != nil {
						if ev.Payload, err = claimcheck.Load(ctx, payloads, *ev.PayloadRef); err != nil {
							return jobs.Outcome{}, fmt.Errorf("rehydrate %s: %w", ev.ID, err)
						}
						ev.PayloadRef = nil
					}
					if err := w.add(ev); err != nil {
						return jobs.Outcome{}, err
					}
				}
			case "incidents":
				res, err := src.List(ctx, incident.Filter{TenantID: s.Job.TenantID, Since: since, Until: until, Limit: min(page, incident.MaxPageSize), Cursor: cp.Cursor})
				if err != nil {
					return jobs.Outcome{}, err
				}
				next = res.Cursor
				for _, inc := range res.Incidents {
					if err := w.add(inc); err != nil {
						return jobs.Outcome{}, err
					}
				}
			default:
				return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, fmt.Errorf("unknown export phase %q", cp.Phase))
			}
			if err := w.flush(); err != nil {
				return jobs.Outcome{}, err
			}
			if cp.Phase == "events" {
				cp.Events += w.total
			} else {
				cp.Incidents += w.total
			}
			cp.Cursor = next
			if next != "" {
				return jobs.Continue(cp), nil
			}
			if cp.Phase == "events" {
				cp.Phase, cp.Cursor = "incidents", ""
				return jobs.Continue(cp), nil
			}
			m := ExportManifest{JobID: s.Job.ID, TenantID: s.Job.TenantID, Since: a.Since, Until: a.Until,
				Events: cp.Events, Incidents: cp.Incidents, Parts: cp.Parts, CreatedAt: time.Now().UTC()}
			if policies != nil {
				_, periods, err := policies.Effective(ctx, s.Job.TenantID)
				if err != nil {
					return jobs.Outcome{}, err
				}
				if periods.ExportsDays > 0 {
					// The purge deletes exports finished before its cutoff
					// (now − exportsDays), at its next daily run after this.
					m.ExpiresAt = m.CreatedAt.Add(time.Duration(periods.ExportsDays) * retention.Day)
				}
			}
			if m.Parts == nil {
				m.Parts = []ExportPart{}
			}
			for _, p := range m.Parts {
				m.Bytes += p.Bytes
			}
			body, err := json.MarshalIndent(m, "", "  ")
			if err != nil {
				return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
			}
			key := s.Scope + "manifest.json"
			if err := objects.Put(ctx, bucket, key, body); err != nil {
				return jobs.Outcome{}, err
			}
			return jobs.Done(ExportResult{Events: cp.Events, Incidents: cp.Incidents, ManifestKey: key, ExpiresAt: m.ExpiresAt}), nil
		}),
	)
}

func (a ExportArgs) bounds() (since, until time.Time, err error) {
	parse := func(name, v string) (time.Time, error) {
		if v == "" {
			return time.Time{}, nil
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return t, &jobs.RequestError{Code: jobs.CodeInvalidArgs, Message: name + " must be an RFC 3339 time"}
		}
		return t, nil
	}
	if since, err = parse("since", a.Since); err != nil {
		return
	}
	if until, err = parse("until", a.Until); err != nil {
		return
	}
	if !since.IsZero() && !until.IsZero() && !since.Before(until) {
		err = &jobs.RequestError{Code: jobs.CodeInvalidArgs, Message: "since must be before until"}
	}
	return
}

// partWriter streams a step's records into gzip NDJSON parts, writing a
// part (and starting the next) once it holds limit bytes of NDJSON: a
// step holds one compressed part and one record at a time. Records are
// encoded without HTML escaping (json.Marshal turns each < > & into a
// six-byte \u escape: a 1 MiB payload of < grew to 6 MiB).
type partWriter struct {
	ctx           context.Context
	objects       Objects
	bucket, scope string
	records       string
	limit         int
	parts         *[]ExportPart
	buf           bytes.Buffer
	zw            *gzip.Writer
	enc           *json.Encoder
	plain         counter
	count, total  int
}

// counter counts the bytes written through it.
type counter struct {
	w io.Writer
	n int
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// add encodes one record as a line of the current part.
func (w *partWriter) add(v any) error {
	if w.zw == nil {
		w.buf.Reset()
		w.zw = gzip.NewWriter(&w.buf)
		w.plain = counter{w: w.zw}
		w.enc = json.NewEncoder(&w.plain)
		w.enc.SetEscapeHTML(false)
	}
	if err := w.enc.Encode(v); err != nil {
		return jobs.Fail(jobs.CodeHandlerFailed, err)
	}
	w.count++
	w.total++
	if w.plain.n >= w.limit {
		return w.flush()
	}
	return nil
}

// flush writes the current part, if it holds any record.
func (w *partWriter) flush() error {
	if w.zw == nil || w.count == 0 {
		return nil
	}
	if err := w.zw.Close(); err != nil {
		return err
	}
	sum := sha256.Sum256(w.buf.Bytes())
	p := ExportPart{Key: fmt.Sprintf("%spart-%05d-%s.ndjson.gz", w.scope, len(*w.parts)+1, w.records), Records: w.records,
		Count: w.count, Bytes: w.buf.Len(), SHA256: hex.EncodeToString(sum[:])}
	if err := w.objects.Put(w.ctx, w.bucket, p.Key, w.buf.Bytes()); err != nil {
		return err
	}
	*w.parts = append(*w.parts, p)
	w.zw, w.enc, w.count = nil, nil, 0
	w.buf = bytes.Buffer{} // let the part's memory go
	return nil
}

// strictArgs decodes args with no unknown members, as an invalid_args
// refusal.
func strictArgs(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &jobs.RequestError{Code: jobs.CodeInvalidArgs, Message: "args: " + err.Error()}
	}
	return nil
}
