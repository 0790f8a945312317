package devstack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/siteswarm/eventplatform/internal/handlers/deliver"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
)

// SinkPath is where the local HTTP subscriber sink receives deliveries:
// SinkPath + "/" + topic is every HTTP topic's default subscriber URL.
const SinkPath = "/__deliveries"

// maxSinkRecords bounds what the sink keeps per topic, so a stack left
// running for days does not grow without limit; the oldest go first.
const maxSinkRecords = 1000

// Delivery is one request the sink received.
type Delivery struct {
	Topic      string    `json:"topic"`
	ReceivedAt time.Time `json:"receivedAt"`
	// Status is what the sink answered (non-2xx while the topic is set to
	// fail).
	Status int `json:"status"`
	// EventID is the body's "id", else the webhook-id header.
	EventID string            `json:"eventId,omitempty"`
	Headers map[string]string `json:"headers"`
	// Body is the request body: JSON byte for byte as received (GET
	// /__deliveries lists it unchanged, so a subscriber library verifies
	// the recorded signature over it), anything else as a JSON string.
	Body json.RawMessage `json:"body"`
	// Signature is what checking the Standard Webhooks signature against
	// the topic's signing secrets found, the way a subscriber would:
	// SignatureVerified, or why not (SignatureMissing, SignatureStale,
	// SignatureMismatch). Empty when the sink has no secrets for the topic.
	Signature string `json:"signature,omitempty"`
}

// What the sink found checking a delivery's signature.
const (
	SignatureVerified = "verified"
	SignatureMissing  = "missing"  // no webhook-id/-timestamp/-signature
	SignatureStale    = "stale"    // webhook-timestamp outside the tolerance
	SignatureMismatch = "mismatch" // no v1 signature matches any secret
)

// Delivered reports whether the sink accepted the delivery.
func (d Delivery) Delivered() bool { return d.Status >= 200 && d.Status < 300 }

// failure is how the sink answers a failing topic.
type failure struct {
	Status     int `json:"status"`
	RetryAfter int `json:"retryAfter,omitempty"`
}

// Sink is the local HTTP subscriber: it records what the HTTP consumers
// deliver, per topic, and can be told to fail a topic so the retry, DLQ,
// incident and replay path can be tried by hand.
type Sink struct {
	// Secrets returns a topic's active signing secrets; each delivery is
	// checked against them and the outcome recorded (never enforced: the
	// sink answers the same either way, so a hand-made curl still lands).
	// Nil: signatures are not checked.
	Secrets func(topic string) []string
	// Observe, when set, sees every delivery as it is recorded (the sink
	// keeps only the last few per topic; a reliability run counts all).
	Observe func(Delivery)
	// Decide, when set, answers each delivery of a topic that is not
	// failing as a whole: an HTTP status (0 or 2xx accepts) and a
	// Retry-After in seconds (a reliability run's flaky subscriber).
	Decide func(topic, eventID string) (status, retryAfter int)
	// Latency, when set, is how long the sink takes to answer each
	// delivery of a topic (recorded as it arrives): a subscriber slower
	// than what is published, for a backlog to form (a reliability run).
	Latency func(topic string) time.Duration

	mu      sync.Mutex
	byTopic map[string][]Delivery
	failing map[string]failure
	now     func() time.Time
}

// NewSink returns an empty sink.
func NewSink() *Sink {
	return &Sink{byTopic: map[string][]Delivery{}, failing: map[string]failure{}, now: time.Now}
}

// Deliveries returns what topic received, oldest first ("" = every topic).
func (k *Sink) Deliveries(topic string) []Delivery {
	k.mu.Lock()
	defer k.mu.Unlock()
	if topic != "" {
		return slices.Clone(k.byTopic[topic])
	}
	var all []Delivery
	for _, t := range slices.Sorted(maps.Keys(k.byTopic)) {
		all = append(all, k.byTopic[t]...)
	}
	return all
}

// everyTopic is the failing-set key of a failure for every topic.
const everyTopic = "*"

// Fail makes the sink answer status to every delivery for topic ("" or
// "*" = every topic) until Recover; retryAfter > 0 adds a Retry-After
// header.
func (k *Sink) Fail(topic string, status, retryAfter int) {
	if topic == "" {
		topic = everyTopic
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.failing[topic] = failure{Status: status, RetryAfter: retryAfter}
}

// Recover ends Fail for topic ("" = every failing topic).
func (k *Sink) Recover(topic string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if topic == "" {
		clear(k.failing)
		return
	}
	delete(k.failing, topic)
}

// Reset forgets every recorded delivery.
func (k *Sink) Reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	clear(k.byTopic)
}

func (k *Sink) record(topic string, r *http.Request, body []byte) failure {
	k.mu.Lock()
	defer k.mu.Unlock()
	answer, failing := k.failing[topic]
	if !failing {
		answer, failing = k.failing[everyTopic]
	}
	if !failing {
		answer = failure{Status: http.StatusOK}
	}
	var probe struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(body, &probe)
	if !failing && k.Decide != nil {
		if status, retryAfter := k.Decide(topic, probe.ID); status != 0 {
			answer = failure{Status: status, RetryAfter: retryAfter}
		}
	}
	d := Delivery{Topic: topic, ReceivedAt: k.now().UTC(), Status: answer.Status, Headers: map[string]string{}}
	for name, vs := range r.Header {
		d.Headers[strings.ToLower(name)] = strings.Join(vs, ",")
	}
	if json.Valid(body) {
		d.Body = json.RawMessage(body)
		var probe struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(body, &probe)
		d.EventID = probe.ID
	} else {
		d.Body, _ = json.Marshal(string(body))
	}
	if d.EventID == "" {
		d.EventID = r.Header.Get("webhook-id")
	}
	if k.Secrets != nil {
		d.Signature = checkSignature(k.Secrets(topic), r.Header, body, d.ReceivedAt)
	}
	recs := append(k.byTopic[topic], d)
	if len(recs) > maxSinkRecords {
		recs = slices.Delete(recs, 0, len(recs)-maxSinkRecords)
	}
	k.byTopic[topic] = recs
	if k.Observe != nil {
		k.Observe(d)
	}
	return answer
}

// checkSignature verifies a delivery under any of secrets ("" if there are
// none).
func checkSignature(secrets []string, h http.Header, body []byte, now time.Time) string {
	if len(secrets) == 0 {
		return ""
	}
	outcome := SignatureMismatch
	for _, secret := range secrets {
		err := deliver.Verify(secret, h, body, deliver.DefaultTolerance, now)
		switch {
		case err == nil:
			return SignatureVerified
		case errors.Is(err, deliver.ErrMissingHeaders):
			return SignatureMissing
		case errors.Is(err, deliver.ErrTimestamp):
			return SignatureStale
		}
	}
	return outcome
}

// routes mounts the sink's API on mux.
func (k *Sink) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST "+SinkPath+"/{topic}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, lambdalocal.MaxHTTPBody))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		answer := k.record(r.PathValue("topic"), r, body)
		if k.Latency != nil {
			select {
			case <-time.After(k.Latency(r.PathValue("topic"))):
			case <-r.Context().Done():
			}
		}
		if answer.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(answer.RetryAfter))
		}
		writeJSON(w, answer.Status, map[string]any{"received": answer.Status < 300})
	})
	mux.HandleFunc("GET "+SinkPath, func(w http.ResponseWriter, r *http.Request) {
		topic := r.URL.Query().Get("topic")
		k.mu.Lock()
		failing := maps.Clone(k.failing)
		k.mu.Unlock()
		writeDeliveries(w, k.Deliveries(topic), failing, topic)
	})
	mux.HandleFunc("DELETE "+SinkPath, func(w http.ResponseWriter, _ *http.Request) {
		k.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST "+SinkPath+"/fail", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		status, retryAfter := http.StatusServiceUnavailable, 0
		var err error
		if v := q.Get("status"); v != "" {
			if status, err = strconv.Atoi(v); err != nil || status < 400 || status > 599 {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("status %q: want an HTTP error status (400-599)", v)})
				return
			}
		}
		if v := q.Get("retryAfter"); v != "" {
			if retryAfter, err = strconv.Atoi(v); err != nil || retryAfter < 0 {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("retryAfter %q: want seconds", v)})
				return
			}
		}
		topic := q.Get("topic")
		k.Fail(topic, status, retryAfter)
		writeJSON(w, http.StatusOK, map[string]any{"topic": topic, "status": status, "retryAfter": retryAfter})
	})
	mux.HandleFunc("DELETE "+SinkPath+"/fail", func(w http.ResponseWriter, r *http.Request) {
		k.Recover(r.URL.Query().Get("topic"))
		w.WriteHeader(http.StatusNoContent)
	})
}

// writeDeliveries answers GET /__deliveries: {"deliveries":[…],"failing":
// {…},"topic"?}, each delivery's body spliced in byte for byte as the sink
// received it. encoding/json would re-indent or compact a RawMessage (and
// escape <, > and &), and then a subscriber library could not verify a
// recorded delivery's signature over the listed body.
func writeDeliveries(w http.ResponseWriter, deliveries []Delivery, failing map[string]failure, topic string) {
	buf := []byte(`{"deliveries":[`)
	for i, d := range deliveries {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = d.appendJSON(buf)
	}
	buf = append(buf, `],"failing":`...)
	f, _ := json.Marshal(failing)
	buf = append(buf, f...)
	if topic != "" {
		buf = append(buf, `,"topic":`...)
		buf = append(buf, quoteJSON(topic)...)
	}
	buf = append(buf, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf)
}

// appendJSON appends the delivery as a JSON object whose body member holds
// the body's bytes as received.
func (d Delivery) appendJSON(buf []byte) []byte {
	body := d.Body
	d.Body = nil
	var head bytes.Buffer
	enc := json.NewEncoder(&head)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		Delivery
		Body json.RawMessage `json:"body,omitempty"` // shadows Delivery.Body: left out here, spliced in below
	}{Delivery: d})
	h := bytes.TrimRight(head.Bytes(), "\n")
	if len(body) == 0 {
		return append(buf, h...)
	}
	buf = append(buf, h[:len(h)-1]...)
	buf = append(buf, `,"body":`...)
	buf = append(buf, body...)
	return append(buf, '}')
}

func quoteJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
