package suites_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
)

// stripeInvoice is the committed invoice.paid sample as Stripe sends it
// (its key order and indentation), with its event id and customer
// replaced.
func stripeInvoice(t *testing.T, id, customer string) []byte {
	t.Helper()
	raw, err := os.ReadFile("../../../events/stripe/invoice.paid.json")
	require.NoError(t, err)
	b := bytes.Replace(raw, []byte(`"id": "evt_1PzB7sLkdIwHu7ixQm3nT0aX"`), []byte(`"id": "`+id+`"`), 1)
	b = bytes.Replace(b, []byte(`"customer": "cus_QqR8mN2pLk4sTv"`), []byte(`"customer": "`+customer+`"`), 1)
	require.NotEqual(t, raw, b)
	return b
}

// postStripe delivers a Stripe event to the webhook as Stripe does,
// sending it again after a refusal (a busy local stack answers 503, which
// Stripe retries), and records the publish and the acknowledgement.
func (r *reliabilityStack) postStripe(id string, body []byte) {
	r.ledger.mu.Lock()
	r.ledger.published[id] = time.Now()
	r.ledger.mu.Unlock()
	for attempt := 0; attempt < 10; attempt++ {
		req, err := http.NewRequest(http.MethodPost, r.st.URL()+devstack.StripeWebhookPath, bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set(stripe.SignatureHeader, stripe.Sign(body, time.Now(), devstack.DefaultStripeSecret))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				r.ledger.mu.Lock()
				r.ledger.acked[id] = true
				r.ledger.mu.Unlock()
				return
			}
		}
		time.Sleep(time.Second)
	}
}

// Scenario 15: billing.events is a FIFO topic grouped by Stripe customer.
// One customer's events fail (the subscriber answers 503 to them) for an
// outage, another's fail for good, while every other customer's events
// flow: the others' latency; the recovering customer's events delivered in
// their order once it is back; the never-recovering customer's events
// dead-lettered in their order, one incident each. Each customer's events
// are published one after the other through the Stripe webhook, customers
// in parallel, the failing customer's spread over its outage. make test:
// 20 customers of 4 events, an 8 s outage, a 1–4 s backoff (shown to fail
// with billing.events a standard queue: the failing customer's later
// events arrive first); make reliability: 200 customers of 5 events, an
// 80 s outage, a 2 s backoff doubling to 30 s (billing's 8 attempts then
// take about 2 minutes per event before a dead letter, so the outage ends
// inside the first event's attempts; the deployed 5 s to 15 min would take
// 10.6 minutes).
func TestReliabilityFailingCustomer(t *testing.T) {
	settings := map[string]string{"CONSUMER_BACKOFF_CAP": "4s"}
	if *reliabilityFull {
		settings["CONSUMER_BACKOFF_BASE"], settings["CONSUMER_BACKOFF_CAP"] = "2s", "30s"
	}
	// Billing's subscriber-health breaker is off here, as scenario 8's is
	// for CRM: this scenario is about order and dead letters within groups.
	// With it on, once the never-recovering customer's events are the only
	// ones left they are the topic's whole traffic, its failure streak trips
	// the breaker, and they wait in the queue for the probes (backing off
	// to 15 minutes) instead of being dead-lettered: held, not lost, but
	// not what this scenario measures (the breaker counts failures per
	// topic, not per group).
	billing := topology.Billing
	r := startReliabilityStackWith(t, settings, withoutBreaker(billing))
	customers, perCustomer := size(20, 200), size(4, 5)
	outage := time.Duration(size(8, 80)) * time.Second
	run := ids("rel15", 1)[0]
	down, dead := run+"_cus_down", run+"_cus_dead"

	// Every customer's events, in publish order; the failing two first in
	// the list so they are published at the start of the outage.
	names := []string{down, dead}
	for i := range customers - 2 {
		names = append(names, fmt.Sprintf("%s_cus_%d", run, i))
	}
	events := map[string][]string{}
	owner := map[string]string{}
	for _, c := range names {
		n := perCustomer
		if c == dead {
			n = size(2, 3)
		}
		for j := range n {
			id := fmt.Sprintf("evt_%s_%d", c, j)
			events[c] = append(events[c], id)
			owner[id] = c
		}
	}

	var (
		mu        sync.Mutex
		delivered = map[string][]string{} // customer → events in the order of their first delivery
		seen      = map[string]bool{}
		deadOrder []string
		recovered atomic.Bool
	)
	r.st.Sink.Observe = func(d devstack.Delivery) {
		r.ledger.observe(d)
		if d.Topic != billing || !d.Delivered() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !seen[d.EventID] {
			seen[d.EventID] = true
			delivered[owner[d.EventID]] = append(delivered[owner[d.EventID]], d.EventID)
		}
	}
	r.st.Sink.Decide = func(topic, id string) (int, int) {
		if topic == billing && (owner[id] == dead || (owner[id] == down && !recovered.Load())) {
			return http.StatusServiceUnavailable, 0
		}
		return 0, 0
	}
	dlq := r.st.Resources.Queues[billing].DLQURL
	onSend := func(m *sqs.SendMessageInput) {
		if aws.ToString(m.QueueUrl) != dlq {
			return
		}
		var ev struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal([]byte(aws.ToString(m.MessageBody)), &ev)
		mu.Lock()
		deadOrder = append(deadOrder, ev.ID)
		mu.Unlock()
	}
	r.onSend.Store(&onSend)

	start := time.Now()
	// The failing customer's events arrive spread over its outage, so
	// their retries are due at different times (the first has backed off
	// the longest): a queue without groups would deliver the later ones
	// first once it is back.
	var spread sync.WaitGroup
	spread.Go(func() {
		for i, id := range events[down] {
			time.Sleep(time.Until(start.Add(time.Duration(i) * outage / time.Duration(len(events[down])+1))))
			r.postStripe(id, stripeInvoice(t, id, down))
		}
	})
	inParallel(names[1:], 16, func(c string) {
		for _, id := range events[c] {
			r.postStripe(id, stripeInvoice(t, id, c))
		}
	})
	spread.Wait()
	published := time.Since(start)
	time.Sleep(time.Until(start.Add(outage)))
	recovered.Store(true)
	recoveredAt := time.Now()
	isIncident := func(id, topic string) bool {
		_, err := r.incidents.Get(context.Background(), incident.ID(id, topic))
		return err == nil
	}
	// Provider events are keyed by their own id (no tenant prefix).
	end := time.Now()
	for deadline := end.Add(20 * time.Minute); time.Now().Before(deadline) && !r.ledger.complete([]string{billing}, isIncident); {
		time.Sleep(50 * time.Millisecond)
	}
	end = time.Now()

	var others []string
	for _, c := range names[2:] {
		others = append(others, events[c]...)
	}
	lo, ld := r.ledger.latencies(others, []string{billing}), r.ledger.latencies(events[down], []string{billing})
	var downDone time.Time
	r.ledger.mu.Lock()
	for _, id := range events[down] {
		if at := r.ledger.firstAt[billing][id]; at.After(downDone) {
			downDone = at
		}
	}
	r.ledger.mu.Unlock()
	var all []string
	for _, c := range names {
		all = append(all, events[c]...)
	}
	f := r.ledger.figures("15. a FIFO topic (billing.events, grouped by Stripe customer): one customer failing for an outage, one for good", []string{billing}, len(all), start, end, isIncident)
	mu.Lock()
	var deadLettered []string
	for _, id := range deadOrder {
		if owner[id] == dead {
			deadLettered = append(deadLettered, id)
		}
	}
	f.Note = fmt.Sprintf("%d customers × %d events published in %s; the other %d customers' p50 %s, **p99 %s** while one customer's events failed for %s; that customer's %d events delivered in order, the last %s after it recovered (p99 from publish %s); the never-recovering customer's %d events dead-lettered in order, one incident each",
		customers, perCustomer, published.Round(time.Second), customers-2,
		percentile(lo, 50).Round(time.Millisecond), percentile(lo, 99).Round(time.Millisecond), outage,
		len(events[down]), downDone.Sub(recoveredAt).Round(time.Millisecond), percentile(ld, 99).Round(time.Millisecond), len(deadLettered))
	mu.Unlock()
	record(t, f)

	require.Zero(t, f.Lost)
	require.Equal(t, len(all), f.Acked, "the webhook acknowledged every event")
	mu.Lock()
	defer mu.Unlock()
	for _, c := range names {
		if c == dead {
			continue
		}
		require.Equal(t, events[c], delivered[c], "customer %s: every event delivered, in the order accepted", c)
	}
	require.True(t, downDone.After(recoveredAt), "the failing customer's events waited for it")
	require.Empty(t, delivered[dead], "never delivered")
	require.Equal(t, events[dead], deadLettered, "dead-lettered one by one, in the order accepted")
	for _, id := range events[dead] {
		require.True(t, isIncident(id, billing), "%s is an incident", id)
	}
	require.Len(t, lo, len(others))
}
