package jobkinds

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
	"github.com/siteswarm/eventplatform/internal/subject"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

// Rejection codes a file import adds to ingest's and the webhook
// adapter's (envelope.Code values, which the report carries as they are).
const (
	// CodeTenantMismatch: the record names (or its Stripe account or
	// metadata attributes it to) a tenant other than the file's.
	CodeTenantMismatch = "tenant_mismatch"
	// CodeLineTooLong: the line is longer than MaxImportLineBytes.
	CodeLineTooLong = "line_too_long"
	// CodeInvalidRecord: the line is not a JSON object.
	CodeInvalidRecord = "invalid_record"
	// CodeUnrouted: valid, but no route takes its type: nothing stored.
	CodeUnrouted = "unrouted"
)

// MaxImportLineBytes bounds one line: a Stripe list page (GET /v1/events,
// up to 100 events) fits; every record in it is still bounded by ingest.
const MaxImportLineBytes = 8 << 20

// DerivedIDPrefix starts the id a file import gives an envelope that has
// none: "imp-" and 40 hex digits of the SHA-256 of the record's canonical
// JSON (with its tenant), so re-reading the record (a re-run, a crash)
// gives it the same id and ingest acknowledges it as a duplicate.
const DerivedIDPrefix = "imp-"

// importRecord is one record of a line, ready for ingest, or why not.
type importRecord struct {
	line  int64
	index int // within a Stripe list page line; -1 for a plain record
	id    string
	// lane is the record's ordering key as ingest derives it (its FIFO
	// message group within the tenant; "" for the tenant's whole
	// sequence): records of one lane are published in file order.
	lane string
	raw  []byte
	rej  *ImportError
}

// ImportError is one line of the error report.
type ImportError struct {
	Line int64 `json:"line"`
	// Index is the event's position in a Stripe list page line.
	Index   *int   `json:"index,omitempty"`
	ID      string `json:"id,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// recordHead is what a line must show to be routed: a Stripe event
// ("object":"event"), a Stripe list page ("object":"list"), else a
// platform envelope.
type recordHead struct {
	Object   json.RawMessage `json:"object"`
	Data     json.RawMessage `json:"data"`
	ID       json.RawMessage `json:"id"`
	TenantID json.RawMessage `json:"tenantId"`
	Subject  json.RawMessage `json:"subject"`
}

// recordParser turns lines into records for one tenant.
type recordParser struct {
	tenant string
	stripe Canonicalizer // attributes to tenant when nothing else does
}

func (p recordParser) reject(line int64, index int, id, code, field, format string, args ...any) importRecord {
	e := &ImportError{Line: line, ID: id, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
	if index >= 0 {
		e.Index = &index
	}
	return importRecord{line: line, index: index, id: id, rej: e}
}

// parse reads one (non-blank) line.
func (p recordParser) parse(ctx context.Context, lineNo int64, line []byte) []importRecord {
	var h recordHead
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &h) != nil {
		return []importRecord{p.reject(lineNo, -1, "", CodeInvalidRecord, "", "the line is not a JSON object (one envelope or Stripe event per line)")}
	}
	switch string(h.Object) {
	case `"event"`:
		return []importRecord{p.stripeEvent(ctx, lineNo, -1, trimmed)}
	case `"list"`:
		var events []json.RawMessage
		if err := json.Unmarshal(h.Data, &events); err != nil {
			return []importRecord{p.reject(lineNo, -1, "", CodeInvalidRecord, "data", "a Stripe list page needs a data array of events")}
		}
		out := make([]importRecord, 0, len(events))
		for i, ev := range events {
			out = append(out, p.stripeEvent(ctx, lineNo, i, ev))
		}
		return out
	}
	return []importRecord{p.envelope(lineNo, trimmed, h)}
}

// envelope checks a platform envelope's tenant, fills in the file's tenant
// and a derived id where they are absent, and leaves everything else
// (validation, limits, the producer's rights) to ingest, byte for byte.
func (p recordParser) envelope(lineNo int64, raw []byte, h recordHead) importRecord {
	var id string
	if len(h.ID) > 0 && json.Unmarshal(h.ID, &id) != nil {
		id = "" // not a string: ingest says why
	}
	if len(h.TenantID) > 0 {
		var t string
		if json.Unmarshal(h.TenantID, &t) == nil && t != "" && t != p.tenant {
			return p.reject(lineNo, -1, id, CodeTenantMismatch, "tenantId", "the record names tenant %q; a file under imports/%s/ may only write tenant %q", t, p.tenant, p.tenant)
		}
	} else {
		raw = spliceMember(raw, "tenantId", p.tenant)
	}
	if len(h.ID) == 0 {
		c, err := canonjson.Canonical(raw)
		if err != nil {
			return p.reject(lineNo, -1, "", string(envelope.CodeInvalidEnvelope), "", "the record is not valid JSON: %v", err)
		}
		sum := sha256.Sum256(c)
		id = DerivedIDPrefix + hex.EncodeToString(sum[:])[:40]
		raw = spliceMember(raw, "id", id)
	}
	// The lane is the envelope's ordering key (an internal producer's is
	// its subject, subject.OrderingKey): its subject, else none — the tenant's whole
	// sequence, one lane.
	var lane string
	if len(h.Subject) > 0 && json.Unmarshal(h.Subject, &lane) != nil {
		lane = "" // not a string: ingest says why
	}
	return importRecord{line: lineNo, index: -1, id: id, lane: lane, raw: raw}
}

// stripeEvent canonicalizes a Stripe event exactly as the webhook adapter
// does (the adapter attributes it: the Connect account's mapping, then the
// object's metadata, then — here — the file's tenant), refusing one that
// belongs to another tenant.
func (p recordParser) stripeEvent(ctx context.Context, lineNo int64, index int, raw []byte) importRecord {
	var head struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &head)
	if p.stripe == nil {
		return p.reject(lineNo, index, head.ID, CodeInvalidRecord, "", "Stripe events cannot be imported here: no Stripe adapter is configured")
	}
	ev, err := p.stripe.Canonicalize(ctx, webhook.Delivery{Body: raw})
	if err != nil {
		var we *webhook.Error
		if errors.As(err, &we) {
			return p.reject(lineNo, index, head.ID, string(we.Code), "", "%s", we.Message)
		}
		return p.reject(lineNo, index, head.ID, CodeInvalidRecord, "", "%v", err)
	}
	if ev.TenantID != p.tenant {
		return p.reject(lineNo, index, ev.ID, CodeTenantMismatch, "", "the Stripe event belongs to tenant %q (its account or metadata); a file under imports/%s/ may only write tenant %q", ev.TenantID, p.tenant, p.tenant)
	}
	body, err := webhook.Encode(ev)
	if err != nil {
		return p.reject(lineNo, index, ev.ID, string(envelope.CodeInvalidPayload), "", "%v", err)
	}
	// The lane is the event's ordering key, its FIFO group, as the
	// provider's rules say (subject.OrderingKeyOf: the customer, not the
	// object the event is about), so a customer's invoices and
	// subscriptions keep the file's order.
	return importRecord{line: lineNo, index: index, id: ev.ID, lane: subject.OrderingKeyOf(ev), raw: body}
}

// spliceMember adds "name":"value" as the object's first member, leaving
// every other byte as it was (the payload reaches ingest verbatim).
func spliceMember(obj []byte, name, value string) []byte {
	rest := bytes.TrimSpace(obj[1:])
	member := strconv.Quote(name) + ":" + quoteJSON(value)
	out := make([]byte, 0, len(obj)+len(member)+2)
	out = append(out, '{')
	out = append(out, member...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
