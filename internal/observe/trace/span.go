package trace

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// span is a segment (the document sent to the daemon) or a subsegment
// nested in one. A subsegment of the Lambda invocation's own segment
// (which Lambda records, not us) is sent on its own, as an "independent
// subsegment" naming its parent.
type span struct {
	mu        sync.Mutex
	name, id  string
	traceID   string
	parentID  string
	sampled   bool
	start     time.Time
	end       time.Time
	namespace string
	parent    *span // nil for a segment and for a subsegment of Lambda's
	// facade marks the Lambda invocation's segment: known from its header,
	// recorded by Lambda, never sent by us.
	facade      bool
	annotations map[string]string
	aws         map[string]any
	http        map[string]any
	fault       bool
	errored     bool
	throttle    bool
	cause       string
	children    []*span
}

type spanKey struct{}

func spanFrom(ctx context.Context) *span {
	s, _ := ctx.Value(spanKey{}).(*span)
	return s
}

func withSpan(ctx context.Context, s *span) context.Context {
	return context.WithValue(ctx, spanKey{}, s)
}

// header is what a downstream call carries: this span as its parent.
func (s *span) header() header {
	h := header{root: s.traceID, parent: s.id, sampled: sampledNo}
	if s.sampled {
		h.sampled = sampledYes
	}
	return h
}

// child starts a subsegment of s.
func (s *span) child(name string) *span {
	return &span{name: name, id: newSpanID(), traceID: s.traceID, parentID: s.id, sampled: s.sampled, start: now(), parent: s}
}

// finish ends s: a subsegment joins its parent's document, a segment (or a
// subsegment of Lambda's segment) is sent.
func (s *span) finish(err error) {
	s.mu.Lock()
	s.end = now()
	if err != nil {
		s.fault = s.fault || !s.errored && !s.throttle
		s.cause = err.Error()
	}
	s.mu.Unlock()
	if !s.sampled {
		return
	}
	if s.parent != nil && !s.parent.facade {
		s.parent.mu.Lock()
		s.parent.children = append(s.parent.children, s)
		s.parent.mu.Unlock()
		return
	}
	send(s)
}

func (s *span) annotate(k, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.annotations == nil {
		s.annotations = map[string]string{}
	}
	s.annotations[k] = v
}

// document is the X-Ray segment document of s
// (https://docs.aws.amazon.com/xray/latest/devguide/xray-api-segmentdocuments.html).
type document struct {
	Name        string            `json:"name"`
	ID          string            `json:"id"`
	TraceID     string            `json:"trace_id,omitempty"`
	ParentID    string            `json:"parent_id,omitempty"`
	Type        string            `json:"type,omitempty"`
	StartTime   float64           `json:"start_time"`
	EndTime     float64           `json:"end_time"`
	Namespace   string            `json:"namespace,omitempty"`
	Origin      string            `json:"origin,omitempty"`
	Fault       bool              `json:"fault,omitempty"`
	Error       bool              `json:"error,omitempty"`
	Throttle    bool              `json:"throttle,omitempty"`
	Cause       *cause            `json:"cause,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	AWS         map[string]any    `json:"aws,omitempty"`
	HTTP        map[string]any    `json:"http,omitempty"`
	Subsegments []document        `json:"subsegments,omitempty"`
}

type cause struct {
	Exceptions []exception `json:"exceptions"`
}

type exception struct {
	ID      string `json:"id"`
	Message string `json:"message"`
}

// doc renders s and its subsegments; top is whether s is the document
// sent (a segment, or an independent subsegment).
func (s *span) doc(top bool) document {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := document{
		Name: s.name, ID: s.id, StartTime: seconds(s.start), EndTime: seconds(s.end), Namespace: s.namespace,
		Fault: s.fault, Error: s.errored, Throttle: s.throttle, AWS: s.aws, HTTP: s.http,
	}
	if len(s.annotations) > 0 {
		d.Annotations = s.annotations
	}
	if top {
		d.TraceID, d.ParentID = s.traceID, s.parentID
		if s.parent != nil { // a subsegment of Lambda's segment
			d.Type = "subsegment"
		}
	}
	if s.cause != "" {
		d.Cause = &cause{Exceptions: []exception{{ID: newSpanID(), Message: truncate(s.cause, 1024)}}}
	}
	for _, c := range s.children {
		d.Subsegments = append(d.Subsegments, c.doc(false))
	}
	return d
}

func seconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// now is the clock of span times (a variable for nothing but clarity: X-Ray
// wants wall-clock epoch seconds).
var now = time.Now

func newSpanID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newTraceID is "1-<epoch seconds, 8 hex>-<96 random bits, 24 hex>".
func newTraceID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	var epoch [4]byte
	binary.BigEndian.PutUint32(epoch[:], uint32(now().Unix()))
	return fmt.Sprintf("1-%s-%s", hex.EncodeToString(epoch[:]), hex.EncodeToString(b[:]))
}

// marshal is the daemon's packet: a header line, then the document.
func marshal(d document) ([]byte, error) {
	body, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return append([]byte(`{"format":"json","version":1}`+"\n"), body...), nil
}
