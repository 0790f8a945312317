package suites_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
)

// latencies are the publish → last topic's first delivery times of ids
// that reached every topic.
func (l *accounts) latencies(ids []string, topics []string) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Duration
	for _, id := range ids {
		var last time.Time
		for _, tp := range topics {
			at, ok := l.firstAt[tp][id]
			if !ok {
				last = time.Time{}
				break
			}
			if at.After(last) {
				last = at
			}
		}
		if !last.IsZero() {
			out = append(out, last.Sub(l.published[id]))
		}
	}
	slices.Sort(out)
	return out
}

// deliveredAll reports whether every one of ids reached every topic.
func (l *accounts) deliveredAll(ids []string, topics []string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		for _, tp := range topics {
			if l.delivered[tp][id] == 0 {
				return false
			}
		}
	}
	return true
}

// percentile is the p-th percentile (0..100) of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// trickle publishes one event of tenant every interval until stop says so
// (checked before each), and returns the ids it published.
func (r *reliabilityStack) trickle(tenant, prefix string, interval time.Duration, stop func(n int) bool) []string {
	var (
		wg  sync.WaitGroup
		out []string
	)
	start := time.Now()
	for i := 0; !stop(i); i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		id := fmt.Sprintf("%s_%d", prefix, i)
		out = append(out, id)
		wg.Go(func() { r.publishWith([]string{id}, 1, func(id string) []byte { return internalEvent(tenant, id) }) })
	}
	wg.Wait()
	return out
}

// subscriberTime is how long scenario 14's subscribers take per delivery.
const subscriberTime = 250 * time.Millisecond

// Scenario 14: one tenant's burst of 5,000 events (fanned out to two
// topics, subscribers answering in 250 ms) beside a quiet tenant's trickle
// of 2 events/s: the quiet
// tenant's end-to-end latency alone and beside the burst, while the burst
// is published and until its backlog is drained. The local SQS does not
// implement fair queues (it delivers a standard queue's messages in about
// the order they were sent, whatever their group), so this is the
// platform's latency without them: the quiet tenant's events wait behind
// the burst's backlog. On AWS the topic queues are fair queues (every send
// carries its tenant as MessageGroupId): once the burst's tenant holds at
// least 30 messages and more than 10% of those in flight, a receive
// returns the quiet tenant's messages first, so its latency stays near
// the one measured alone (docs/consumers.md, "Fair queues").
func TestReliabilityNoisyTenant(t *testing.T) {
	r := startReliabilityStack(t, nil)
	// Subscribers that take 250 ms per delivery: the consumers (10
	// deliveries at once per invocation) then drain fewer events per
	// second than ingest accepts, so the burst builds a backlog, which is
	// what a noisy tenant does to a quiet one.
	r.st.Sink.Latency = func(string) time.Duration { return subscriberTime }
	const quiet, noisy = "acme", "bigco"
	interval := 500 * time.Millisecond // 2 events/s
	burst := ids("inq_rel14_burst", size(300, 5000))
	run := ids("inq_rel14", 1)[0]

	alone := r.trickle(quiet, run+"_alone", interval, func(n int) bool { return n >= size(10, 30) })
	r.waitDelivered(fanOut, 60*time.Second)

	start := time.Now()
	var (
		published time.Duration
		done      = make(chan struct{})
	)
	go func() {
		defer close(done)
		r.publishWith(burst, 16, func(id string) []byte { return internalEvent(noisy, id) })
		published = time.Since(start)
	}()
	// The trickle goes on while the burst is published and its backlog
	// drains (bounded: a stuck burst fails below, not here).
	beside := r.trickle(quiet, run+"_beside", interval, func(n int) bool {
		select {
		case <-done:
			return r.ledger.deliveredAll(burst, fanOut) || time.Since(start) > 20*time.Minute
		default:
			return false
		}
	})
	drained := time.Since(start)
	end := r.waitComplete(fanOut, 5*time.Minute)

	isIncident := func(id, topic string) bool {
		return r.isIncident(id, topic) || r.isIncidentOf(noisy, id, topic)
	}
	all := append(append(append([]string(nil), alone...), beside...), burst...)
	f := r.ledger.figures("14. one tenant's burst beside a quiet tenant's trickle (no fair queues locally)", fanOut, len(all), start, end, isIncident)
	la, lb, ln := r.ledger.latencies(alone, fanOut), r.ledger.latencies(beside, fanOut), r.ledger.latencies(burst, fanOut)
	f.Note = fmt.Sprintf("subscribers answering in %s; %s: %d events in %s; %s: %d events at 2/s; %s's p50 %s, p99 %s alone, p50 %s, **p99 %s** beside the burst (published in %s, drained %s after its first publish); the burst's own p50 %s, p99 %s",
		subscriberTime, noisy, len(burst), published.Round(time.Second), quiet, len(beside), quiet,
		percentile(la, 50).Round(time.Millisecond), percentile(la, 99).Round(time.Millisecond),
		percentile(lb, 50).Round(time.Millisecond), percentile(lb, 99).Round(time.Millisecond),
		published.Round(time.Second), drained.Round(time.Second),
		percentile(ln, 50).Round(time.Millisecond), percentile(ln, 99).Round(time.Millisecond))
	record(t, f)
	require.Zero(t, f.Lost)
	require.Len(t, lb, len(beside), "every quiet event delivered to both topics")
	require.Len(t, ln, len(burst), "every burst event delivered to both topics")
}

// isIncidentOf is isIncident for another tenant's internal event.
func (r *reliabilityStack) isIncidentOf(tenant, id, topic string) bool {
	_, err := r.incidents.Get(context.Background(), incident.ID(tenant+"/"+id, topic))
	return err == nil
}
