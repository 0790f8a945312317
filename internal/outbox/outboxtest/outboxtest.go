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

// Exercise runs the contract against fresh harnesses from newHarness.
func Exercise(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	ctx := context.Background()

	t.Run("AMessageArrivesWithItsBodyAndAttributes", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		m := message(h.Standard, "evt_1", "", `{"id":"evt_1","payload":{"n":1}}`)
		m.ReplayOf = "inc_1"
		require.NoError(t, h.Sender.Send(ctx, m))
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
		require.NoError(t, h.Sender.Send(ctx, message(h.Standard, "evt_2", "", body)))
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
		require.NoError(t, h.Sender.Send(ctx, a))
		require.NoError(t, h.Sender.Send(ctx, b))
		groups := map[string]string{}
		for _, d := range h.Receive(t, h.Standard) {
			groups[d.Attributes[outbox.AttrTenantID]] = d.GroupID
		}
		require.Equal(t, map[string]string{"acme": "acme", "globex": "globex"}, groups, "the tenant, whatever the subject")
	})

	t.Run("AnUnknownTopicIsAnErrorAndSendsNothing", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		require.Error(t, h.Sender.Send(ctx, message("nope.events", "evt_3", "", `{}`)))
		require.Empty(t, h.Receive(t, h.Standard))
	})

	t.Run("FIFOGroupsByTenantAndOrderingKeyAndDropsRepeatedSendsOnly", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		m := message(h.FIFO, "evt_4", "cus_1", `{"id":"evt_4"}`)
		require.NoError(t, h.Sender.Send(ctx, m))
		require.NoError(t, h.Sender.Send(ctx, m), "a provider retry is accepted (and dropped)")
		replay := m
		replay.ReplayOf, replay.DedupID = "inc_4", "replay:inc_4:1"
		require.NoError(t, h.Sender.Send(ctx, replay))
		require.NoError(t, h.Sender.Send(ctx, replay), "a repeated send of one replay is dropped")
		next := replay
		next.DedupID = "replay:inc_4:2"
		require.NoError(t, h.Sender.Send(ctx, next), "the next replay is not")
		noSubject := message(h.FIFO, "evt_5", "", `{"id":"evt_5"}`)
		require.NoError(t, h.Sender.Send(ctx, noSubject))
		long := message(h.FIFO, strings.Repeat("e", 255), "cus_1", `{"id":"long"}`)
		require.NoError(t, h.Sender.Send(ctx, long), "any event id dedupes (a long one too)")
		other := message(h.FIFO, "evt_8", "cus_1", `{"id":"evt_8"}`)
		other.TenantID = "globex"
		require.NoError(t, h.Sender.Send(ctx, other))

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
		require.NoError(t, h.Sender.Send(ctx, a))
		require.NoError(t, h.Sender.Send(ctx, b))
		require.NoError(t, h.Sender.Send(ctx, b), "a retry of one of them is still dropped")
		tenants := map[string]int{}
		for _, d := range h.Receive(t, h.FIFO) {
			tenants[d.Attributes[outbox.AttrTenantID]]++
		}
		require.Equal(t, map[string]int{"acme": 1, "globex": 1}, tenants)
	})
}
