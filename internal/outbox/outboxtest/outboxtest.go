// Package outboxtest is the contract suite of outbox.Sender, the topic
// queues as ingest, the sweeper and replay send to them: a message arrives
// with its body (as the same JSON value, whatever characters it holds) and
// every attribute a consumer reads; a standard topic's message group is
// its tenant (an SQS fair queue's tenant); an unknown topic is an error and
// sends nothing; on a FIFO topic the message group is the tenant's ordering
// key (two tenants never share one) and the dedup id drops repeated sends,
// never the next replay. Every implementation runs Exercise; the SQS
// adapter runs it against the emulator.
package outboxtest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Delivered is a message as a consumer receives it.
type Delivered struct {
	Body       []byte
	Attributes map[string]string
	// GroupID is the message group: the FIFO ordering group, or a standard
	// (fair) queue's tenant.
	GroupID string
}

// Harness is one sender with fresh queues and a way to read them.
type Harness struct {
	Sender outbox.Sender
	// Standard and FIFO name a standard and a FIFO topic the sender serves.
	Standard, FIFO string
	// Receive returns every message waiting on a topic's queue (and removes
	// them).
	Receive func(t *testing.T, topic string) []Delivered
}

func message(topic, id, key, body string) outbox.Message {
	return outbox.Message{Topic: topic, Key: "acme/" + id, EventID: id, TenantID: "acme", Type: "order.created", OrderingKey: key, Body: []byte(body)}
}

// Exercise runs the contract against fresh harnesses from newHarness: every
// case with Send, and again with SendBatch (one message a call) when the
// sender is an outbox.BatchSender, plus the batch cases.
func Exercise(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	t.Run("OneByOne", func(t *testing.T) {
		exercise(t, newHarness, func(ctx context.Context, h Harness, m outbox.Message) error { return h.Sender.Send(ctx, m) })
	})
	probe := newHarness(t)
	if _, ok := probe.Sender.(outbox.BatchSender); !ok {
		return
	}
	t.Run("InBatches", func(t *testing.T) {
		exercise(t, newHarness, func(ctx context.Context, h Harness, m outbox.Message) error {
			return h.Sender.(outbox.BatchSender).SendBatch(ctx, []outbox.Message{m})[0]
		})
		exerciseBatches(t, newHarness)
	})
}

func exercise(t *testing.T, newHarness func(t *testing.T) Harness, sendOne func(context.Context, Harness, outbox.Message) error) {
	ctx := context.Background()

	t.Run("AMessageArrivesWithItsBodyAndAttributes", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		m := message(h.Standard, "evt_1", "", `{"id":"evt_1","payload":{"n":1}}`)
		m.ReplayOf = "inc_1"
		require.NoError(t, sendOne(ctx, h, m))
		got := h.Receive(t, h.Standard)
		require.Len(t, got, 1)
		require.JSONEq(t, string(m.Body), string(got[0].Body))
		require.Equal(t, map[string]string{
			outbox.AttrEventKey: "acme/evt_1", outbox.AttrEventID: "evt_1", outbox.AttrTenantID: "acme",
			outbox.AttrType: "order.created", outbox.AttrTopic: h.Standard, outbox.AttrReplayOf: "inc_1",
		}, got[0].Attributes)
	})

	t.Run("AnyTextArrivesAsTheSameJSONValue", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		// Characters SQS refuses in a body (U+FFFE, U+0001) and ones it
		// accepts only outside the BMP.
		body := "{\"id\":\"evt_2\",\"payload\":{\"text\":\"a\uFFFEb\\u0001c\U0001F600\"}}"
		require.NoError(t, sendOne(ctx, h, message(h.Standard, "evt_2", "", body)))
		got := h.Receive(t, h.Standard)
		require.Len(t, got, 1)
		var want, have any
		require.NoError(t, json.Unmarshal([]byte(body), &want))
		require.NoError(t, json.Unmarshal(got[0].Body, &have))
		require.Equal(t, want, have)
	})

	t.Run("AStandardTopicGroupsByTenant", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		a := message(h.Standard, "evt_6", "order-1", `{"id":"evt_6"}`)
		b := message(h.Standard, "evt_7", "order-1", `{"id":"evt_7"}`)
		b.TenantID = "globex"
		require.NoError(t, sendOne(ctx, h, a))
		require.NoError(t, sendOne(ctx, h, b))
		groups := map[string]string{}
		for _, d := range h.Receive(t, h.Standard) {
			groups[d.Attributes[outbox.AttrTenantID]] = d.GroupID
		}
		require.Equal(t, map[string]string{"acme": "acme", "globex": "globex"}, groups, "the tenant, whatever the subject")
	})

	t.Run("AnUnknownTopicIsAnErrorAndSendsNothing", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		require.Error(t, sendOne(ctx, h, message("nope.events", "evt_3", "", `{}`)))
		require.Empty(t, h.Receive(t, h.Standard))
	})

	t.Run("FIFOGroupsByTenantAndOrderingKeyAndDropsRepeatedSendsOnly", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		m := message(h.FIFO, "evt_4", "cus_1", `{"id":"evt_4"}`)
		require.NoError(t, sendOne(ctx, h, m))
		require.NoError(t, sendOne(ctx, h, m), "a provider retry is accepted (and dropped)")
		replay := m
		replay.ReplayOf, replay.DedupID = "inc_4", "replay:inc_4:1"
		require.NoError(t, sendOne(ctx, h, replay))
		require.NoError(t, sendOne(ctx, h, replay), "a repeated send of one replay is dropped")
		next := replay
		next.DedupID = "replay:inc_4:2"
		require.NoError(t, sendOne(ctx, h, next), "the next replay is not")
		noSubject := message(h.FIFO, "evt_5", "", `{"id":"evt_5"}`)
		require.NoError(t, sendOne(ctx, h, noSubject))
		long := message(h.FIFO, strings.Repeat("e", 255), "cus_1", `{"id":"long"}`)
		require.NoError(t, sendOne(ctx, h, long), "any event id dedupes (a long one too)")
		other := message(h.FIFO, "evt_8", "cus_1", `{"id":"evt_8"}`)
		other.TenantID = "globex"
		require.NoError(t, sendOne(ctx, h, other))

		got := h.Receive(t, h.FIFO)
		require.Len(t, got, 6)
		groups := map[string]int{}
		for _, d := range got {
			groups[d.GroupID]++
		}
		counts := slices.Sorted(maps.Values(groups))
		require.Equal(t, []int{1, 1, 4}, counts, "one group per tenant and key (the tenant without one): acme's four of cus_1 share one, globex's cus_1 is its own")
	})

	t.Run("FIFODeduplicatesPerTenant", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		// Internal producers' ids are unique per tenant only: acme's and
		// globex's evt_9 are two events, and neither may be dropped as a
		// copy of the other, whatever the queue's deduplication scope.
		a := message(h.FIFO, "evt_9", "", `{"id":"evt_9","tenantId":"acme"}`)
		b := message(h.FIFO, "evt_9", "", `{"id":"evt_9","tenantId":"globex"}`)
		b.TenantID, b.Key = "globex", "globex/evt_9"
		require.NoError(t, sendOne(ctx, h, a))
		require.NoError(t, sendOne(ctx, h, b))
		require.NoError(t, sendOne(ctx, h, b), "a retry of one of them is still dropped")
		tenants := map[string]int{}
		for _, d := range h.Receive(t, h.FIFO) {
			tenants[d.Attributes[outbox.AttrTenantID]]++
		}
		require.Equal(t, map[string]int{"acme": 1, "globex": 1}, tenants)
	})
}

// exerciseBatches is the contract of SendBatch beyond one message: many
// messages (more than a request takes, by count and by bytes) all arrive,
// a FIFO group's in the batch's order; a topic the sender does not know
// fails its messages only.
func exerciseBatches(t *testing.T, newHarness func(t *testing.T) Harness) {
	ctx := context.Background()

	t.Run("ABatchOfManyArrivesWholeAndAFIFOGroupInOrder", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		bs := h.Sender.(outbox.BatchSender)
		var ms []outbox.Message
		for i := range 23 {
			id := fmt.Sprintf("evt_b%02d", i)
			ms = append(ms, message(h.FIFO, id, "cus_9", `{"id":"`+id+`"}`))
			// Large bodies: the standard topic's 23 take more than one
			// request's bytes as well as more than its ten entries.
			ms = append(ms, message(h.Standard, id, "", `{"id":"`+id+`","pad":"`+strings.Repeat("p", 30<<10)+`"}`))
		}
		for i, err := range bs.SendBatch(ctx, ms) {
			require.NoError(t, err, i)
		}
		var order []string
		for _, d := range h.Receive(t, h.FIFO) {
			order = append(order, d.Attributes[outbox.AttrEventID])
		}
		var want []string
		for i := range 23 {
			want = append(want, fmt.Sprintf("evt_b%02d", i))
		}
		require.Equal(t, want, order)
		got := map[string]int{}
		for _, d := range h.Receive(t, h.Standard) {
			got[d.Attributes[outbox.AttrEventID]]++
			require.Len(t, d.Body, len(`{"id":"evt_b00","pad":""}`)+30<<10)
		}
		require.Len(t, got, 23)
	})

	t.Run("AnUnknownTopicFailsItsMessagesOnly", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		errs := h.Sender.(outbox.BatchSender).SendBatch(ctx, []outbox.Message{
			message("nope.events", "evt_u1", "", `{}`),
			message(h.Standard, "evt_u2", "", `{"id":"evt_u2"}`),
			message("nope.events", "evt_u3", "", `{}`),
		})
		require.Len(t, errs, 3)
		require.Error(t, errs[0])
		require.NoError(t, errs[1])
		require.Error(t, errs[2])
		got := h.Receive(t, h.Standard)
		require.Len(t, got, 1)
		require.Equal(t, "evt_u2", got[0].Attributes[outbox.AttrEventID])
	})
}
