package testkit

import (
	"bytes"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/identity"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// T0 is the tests' reference instant.
var T0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// Recent is a reference instant near the wall clock, for fixtures stored
// in a table with TTL: Stored's ledger record expires a day after its
// instant, and DynamoDB Local's TTL sweeper deletes expired items, so a
// fixture stamped at a fixed past date (T0) can vanish between the write
// and the read that checks it once the calendar has moved on.
func Recent() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// Clock is a settable time source, safe for concurrent use.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a clock reading t.
func NewClock(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now reads the clock.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// MustJSON encodes v, panicking on error (fixtures only).
func MustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Key is the storage key ingest gives ev under the default topology.
func Key(ev envelope.Event) string {
	p, _ := topology.Default().Producer(ev.Source)
	return ledger.Key(p, ev.TenantID, ev.ID)
}

// Stored is the ledger record and outbox rows ingest commits for ev routed
// to topics at `at`, the rows in status (leased to "fixture" while
// pending, as ingest leaves them before its send), retained for a day.
func Stored(ev envelope.Event, topics []string, at time.Time, status outbox.Status) (ledger.Record, []outbox.Row) {
	p, _ := topology.Default().Producer(ev.Source)
	key := ledger.Key(p, ev.TenantID, ev.ID)
	rec := ledger.Record{
		Key: key, Event: ev, Topics: topics, PayloadHash: identity.Of(p, ev), Status: ledger.StatusReceived,
		CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour),
	}
	rows := make([]outbox.Row, len(topics))
	for i, tp := range topics {
		rows[i] = outbox.Row{
			Key: key, EventID: ev.ID, Topic: tp, TenantID: ev.TenantID, Type: ev.Type, Status: status, MaxAttempts: 5,
			NextRetryAt: at, CreatedAt: at, UpdatedAt: at,
		}
		if status == outbox.StatusPending {
			rows[i].LeaseUntil, rows[i].LeaseOwner = at, "fixture"
		}
	}
	return rec, rows
}

// Event is a minimal valid envelope of tenant acme.
func Event(id, typ, source string, payload string) envelope.Event {
	return envelope.Event{
		SchemaVersion: envelope.SchemaVersion, ID: id, TenantID: "acme", Type: typ, Source: source,
		Timestamp: T0, Payload: json.RawMessage(payload),
	}
}

// Buffer is a bytes buffer safe for concurrent writers (log and EMF
// lines from handlers running in parallel).
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// JSONLines decodes everything written so far as a stream of JSON objects
// (EMF metric lines, JSON log lines), failing the test on anything else.
func (b *Buffer) JSONLines(tb testing.TB) []map[string]any {
	tb.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b.buf.Bytes()))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			tb.Fatalf("testkit: not a JSON line: %v", err)
		}
		out = append(out, m)
	}
	return out
}

// OneTopic is a topology of one HTTP topic, for tests of queue mechanics.
func OneTopic(name string, maxReceive int, fifo bool) topology.Topology {
	return topology.Topology{Topics: []topology.Topic{{
		Name: name, Consumer: topology.ConsumerHTTP, BatchSize: 10,
		ConsumerTimeout: 30 * time.Second, VisibilityTimeout: 30 * time.Second,
		MaxReceiveCount: maxReceive, MaxOutboxAttempts: 5, FIFO: fifo,
	}}}
}
