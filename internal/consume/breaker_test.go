package consume_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// notices records the topics a breaker told the health monitor about.
type notices struct {
	mu     sync.Mutex
	topics []string
}

func (n *notices) Changed(_ context.Context, topic string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.topics = append(n.topics, topic)
	return nil
}

func (n *notices) list() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.topics...)
}

// withBreaker gives the bundle's consumer a real breaker on its events
// table.
func (b *bundle) withBreaker(t *testing.T, n subscriberhealth.Notifier) *dynamo.Breakers {
	t.Helper()
	store := &dynamo.Breakers{Client: b.env.DynamoDB, Table: b.env.Resources.EventsTable}
	obs, err := subscriberhealth.NewObserver(subscriberhealth.ObserverConfig{Topic: b.topic}, subscriberhealth.ObserverDeps{Store: store, Notifier: n})
	require.NoError(t, err)
	b.rebuild(t, func(_ *consume.Config, d *consume.Deps) { d.Breaker = obs })
	return store
}

// drive receives and invokes until done says so or the time is up.
func (b *bundle) drive(t *testing.T, within time.Duration, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !done() {
		require.True(t, time.Now().Before(deadline), "not done within %s", within)
		if msgs := b.receive(t, 10, time.Second); len(msgs) > 0 {
			b.invoke(t, msgs)
		}
	}
}

func tripFast(tp *topology.Topic) {
	tp.MaxReceiveCount = 2
	tp.Breaker = topology.Breaker{TripAfter: 3, ProbeAfter: time.Second, ProbeMax: 2 * time.Second}
}

// A subscriber that is down fails every delivery transiently. Without a
// breaker each message is dead-lettered after its attempts (an incident
// per event); with one the streak opens the breaker, and a message whose
// last attempt fails is held — sent back as a fresh copy — so when the
// subscriber is back every event is delivered once and the DLQ stays
// empty.
func TestBreakerHoldsADeadSubscribersMessages(t *testing.T) {
	t.Parallel()
	for _, withBreaker := range []bool{false, true} {
		t.Run(map[bool]string{false: "without", true: "with"}[withBreaker], func(t *testing.T) {
			t.Parallel()
			b := setup(t, tripFast)
			n := &notices{}
			var store *dynamo.Breakers
			if withBreaker {
				store = b.withBreaker(t, n)
			}
			var down sync.Mutex
			up := false
			b.handler.fail = func(consume.Message, int) error {
				down.Lock()
				defer down.Unlock()
				if up {
					return nil
				}
				return consume.Retry(errors.New("subscriber answered HTTP 503"))
			}
			ids := []string{"evt_h1", "evt_h2", "evt_h3", "evt_h4"}
			for _, id := range ids {
				b.publish(t, id, "")
			}
			ctx := context.Background()
			if !withBreaker {
				var dead int
				b.drive(t, 30*time.Second, func() bool {
					dead += len(b.env.ReceiveAndDelete(ctx, b.q.DLQURL, 10, 0))
					return dead == len(ids)
				})
				return // every event of a dead subscriber became an incident
			}
			// Down long enough for every message to be attempted past its
			// maxReceiveCount.
			b.drive(t, 30*time.Second, func() bool {
				calls, _, _ := b.handler.counts()
				for _, id := range ids {
					if calls[id] <= b.topic.MaxReceiveCount {
						return false
					}
				}
				return true
			})
			dead := b.env.ReceiveAll(ctx, b.q.DLQURL, 10, time.Second)
			require.Empty(t, dead, "the breaker holds what the subscriber cannot take")
			h, err := store.Get(ctx, topicName)
			require.NoError(t, err)
			require.Equal(t, subscriberhealth.Open, h.State)
			require.Equal(t, "subscriber answered HTTP 503", h.LastError)
			require.Contains(t, h.Reason, "consecutive transient failures")
			require.False(t, h.OutageSince.IsZero())
			require.Equal(t, []string{topicName}, n.list(), "one notice: the trip")

			down.Lock()
			up = true
			down.Unlock()
			b.drive(t, 30*time.Second, func() bool { return int(b.handler.distinct.Load()) == len(ids) })
			_, effects, _ := b.handler.counts()
			for _, id := range ids {
				require.Equal(t, 1, effects[id], id)
			}
			require.Empty(t, b.env.ReceiveAll(ctx, b.q.DLQURL, 10, time.Second))
		})
	}
}

// A subscriber refusing events (4xx) is up: those events are incidents as
// always, and the breaker never trips — nothing is even written.
func TestPermanentFailuresNeverTripTheBreaker(t *testing.T) {
	t.Parallel()
	b := setup(t, tripFast)
	n := &notices{}
	store := b.withBreaker(t, n)
	b.handler.fail = func(consume.Message, int) error {
		return consume.Permanent("subscriber_rejected", errors.New("HTTP 410"))
	}
	for _, id := range []string{"evt_p1", "evt_p2", "evt_p3", "evt_p4", "evt_p5"} {
		b.publish(t, id, "")
	}
	ctx := context.Background()
	var dead int
	b.drive(t, 20*time.Second, func() bool {
		dead += len(b.env.ReceiveAndDelete(ctx, b.q.DLQURL, 10, 0))
		return dead == 5
	})
	h, err := store.Get(ctx, topicName)
	require.NoError(t, err)
	require.Zero(t, h.Version, "no breaker record for a subscriber that answers")
	require.Empty(t, n.list())
}

// No extra DynamoDB call per delivery on a healthy topic: the same
// deliveries cost the same DynamoDB calls with a breaker as without.
func TestAHealthyTopicCostsTheBreakerNothing(t *testing.T) {
	t.Parallel()
	calls := map[bool]map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, withBreaker := range []bool{false, true} {
		wg.Go(func() {
			b := setup(t)
			if withBreaker {
				b.withBreaker(t, &notices{})
			}
			ids := []string{"evt_c1", "evt_c2", "evt_c3", "evt_c4", "evt_c5", "evt_c6"}
			for _, id := range ids {
				b.publish(t, id, "")
			}
			b.env.Calls.Reset()
			b.drive(t, 20*time.Second, func() bool { return int(b.handler.distinct.Load()) == len(ids) })
			got := map[string]int{}
			for k, v := range b.env.Calls.Snapshot() {
				if len(k) > 8 && k[:8] == "DynamoDB" {
					got[k] = v
				}
			}
			mu.Lock()
			calls[withBreaker] = got
			mu.Unlock()
		})
	}
	wg.Wait()
	require.NotEmpty(t, calls[false])
	require.Equal(t, calls[false], calls[true])
}

// Another instance trips the breaker while this one holds a fresh cached
// record saying closed: this instance's next last-attempt failure is held,
// not dead-lettered — a record that does not hold is read again before a
// message goes to the DLQ (the cache was trusted for CacheFor, and every
// last attempt in that window of a trip became an incident).
func TestALastAttemptSeesAnotherInstancesTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, func(tp *topology.Topic) {
		tp.MaxReceiveCount = 1
		tp.Breaker = topology.Breaker{TripAfter: 3, ProbeAfter: time.Minute}
	})
	ctx := context.Background()
	store := &dynamo.Breakers{Client: b.env.DynamoDB, Table: b.env.Resources.EventsTable}
	instance := func() *subscriberhealth.Observer {
		// Trusted for a minute: the test does not depend on its own pace.
		obs, err := subscriberhealth.NewObserver(subscriberhealth.ObserverConfig{Topic: b.topic, CacheFor: time.Minute}, subscriberhealth.ObserverDeps{Store: store})
		require.NoError(t, err)
		return obs
	}
	mine, other := instance(), instance()
	b.rebuild(t, func(_ *consume.Config, d *consume.Deps) { d.Breaker = mine })
	h, err := mine.Hold(ctx)
	require.NoError(t, err)
	require.False(t, h.Holding, "closed, and now cached here")

	other.Observe(ctx, consume.Observation{Failures: 3, LastError: "subscriber answered HTTP 503"})
	rec, err := store.Get(ctx, topicName)
	require.NoError(t, err)
	require.Equal(t, subscriberhealth.Open, rec.State, "the other instance tripped it")

	b.handler.fail = func(consume.Message, int) error { return consume.Retry(errors.New("subscriber answered HTTP 503")) }
	b.publish(t, "evt_trip", "")
	msgs := b.receive(t, 1, 5*time.Second)
	require.Len(t, msgs, 1)
	b.invoke(t, msgs)
	require.Empty(t, b.env.ReceiveAll(ctx, b.q.DLQURL, 10, time.Second), "held, not dead-lettered")
	require.NotEqual(t, outbox.StatusDLQ, b.row(t, "evt_trip").Status, "its row is not dead-lettered")
}
