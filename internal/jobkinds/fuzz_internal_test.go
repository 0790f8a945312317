package jobkinds

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

// stubStripe attributes every event to tenant "acme" (or fails).
type stubStripe struct{}

func (stubStripe) Canonicalize(_ context.Context, d webhook.Delivery) (envelope.Event, error) {
	var ev struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(d.Body, &ev) != nil || ev.ID == "" {
		return envelope.Event{}, webhook.Invalid(webhook.CodeInvalidEvent, "not an event")
	}
	return envelope.Event{ID: ev.ID, TenantID: "acme", Payload: d.Body}, nil
}

// FuzzImportLine: whatever a line holds, the parser never panics, and each
// record is either a rejection with a code and a message or ingest input
// that is a JSON object (never a record of another tenant than the file's).
func FuzzImportLine(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","tenantId":"acme","type":"inquiry.created","source":"storefront","timestamp":"2026-12-01T10:00:00Z","payload":{}}`,
		`{"type":"inquiry.created","payload":{}}`, `{}`, `{"tenantId":"globex"}`, `{"tenantId":null}`, `{"id":7}`,
		`{"object":"event","id":"evt_1"}`, `{"object":"list","data":[{"object":"event","id":"evt_1"},3]}`, `{"object":"list","data":7}`,
		`[1]`, `"x"`, `{`, "\xff", ``, ` {"a":1} `,
	} {
		f.Add([]byte(s))
	}
	p := recordParser{tenant: "acme", stripe: stubStripe{}}
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, r := range p.parse(context.Background(), 1, line) {
			if r.rej != nil {
				if r.rej.Code == "" || r.rej.Message == "" || r.rej.Line != 1 {
					t.Fatalf("rejection without code/message/line: %+v", r.rej)
				}
				continue
			}
			var head struct {
				TenantID *string `json:"tenantId"`
			}
			if !json.Valid(r.raw) || bytes.TrimSpace(r.raw)[0] != '{' {
				// An envelope that is not valid JSON goes to ingest as is
				// (it rejects it); only the first member may have been added.
				continue
			}
			if err := json.Unmarshal(r.raw, &head); err == nil && head.TenantID != nil && *head.TenantID != "" && *head.TenantID != "acme" {
				t.Fatalf("a record of tenant %q would be published: %s", *head.TenantID, r.raw)
			}
		}
	})
}

// FuzzLineReader: the lines read back, joined with their line ends, are
// the input, and none is longer than the limit.
func FuzzLineReader(f *testing.F) {
	for _, s := range []string{"a\nb\r\nc", "\n\n", "", "x", "toolongline\nok\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		lr := &lineReader{br: bufio.NewReaderSize(bytes.NewReader(in), 16), max: 8}
		var total int64
		for {
			line, n, tooLong, err := lr.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tooLong && len(line) > 8 {
				t.Fatalf("a line of %d bytes over the limit 8", len(line))
			}
			total += n
		}
		if total != int64(len(in)) || lr.consumed != total {
			t.Fatalf("consumed %d (%d) of %d bytes", total, lr.consumed, len(in))
		}
	})
}

// FuzzImportNotification: an S3 notification record never panics the
// trigger, and whatever it starts is an import of the tenant its key names.
func FuzzImportNotification(f *testing.F) {
	f.Add("ObjectCreated:Put", "b", "imports%2Facme%2Fa.ndjson", "v1")
	f.Add("ObjectCreated:Put", "b", "imports/acme/", "")
	f.Add("ObjectRemoved:Delete", "b", "imports/acme/a", "")
	f.Add("ObjectCreated:Copy", "b", "imports%2FACME%2Fx", "")
	tr := &ImportTrigger{Bucket: "b"}
	f.Fuzz(func(t *testing.T, event, bucket, key, version string) {
		var r events.S3EventRecord
		r.EventName, r.S3.Bucket.Name, r.S3.Object.Key, r.S3.Object.VersionID = event, bucket, key, version
		p, ok, why := tr.ImportStart(r)
		if !ok {
			if why == "" {
				t.Fatal("ignored without a reason")
			}
			return
		}
		var a ImportArgs
		if err := json.Unmarshal(p.Args, &a); err != nil {
			t.Fatal(err)
		}
		if tenant, _ := ImportTenant(a.Key); tenant != p.TenantID || !Importable(a.Key) {
			t.Fatalf("start %+v for key %q", p, a.Key)
		}
	})
}
