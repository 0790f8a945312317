package suites_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// The subscriber-health scenarios (issue 24), beside scenario 8 (the same
// outage without a breaker). At full size CRM runs the default breaker
// policy with the deployed consumer backoff and the health function on its
// deployed 1-minute schedule; make test runs the same shape on a test's
// clock (breakerScale).

// breakerScale is a breaker scenario's policy and stack settings.
type breakerScale struct {
	policy   topology.Breaker
	settings map[string]string
}

// breakerAt is CRM's breaker and the stack's clock: the defaults at full
// size; at small size trips after 3 failures, probes after 1 s (at most 2 s
// apart) for a 1 s window, ramps every second and ends an outage after
// quiet (longer than a flapping scenario's up phase, as the default 2
// minutes are).
func breakerAt(quiet time.Duration) breakerScale {
	if *reliabilityFull {
		return breakerScale{settings: map[string]string{
			"CONSUMER_BACKOFF_BASE": consume.DefaultBackoffBase.String(),
			"CONSUMER_BACKOFF_CAP":  consume.DefaultBackoffCap.String(),
		}}
	}
	return breakerScale{
		policy: topology.Breaker{TripAfter: 3, ProbeAfter: time.Second, ProbeMax: 2 * time.Second,
			ProbeWindow: time.Second, RampEvery: time.Second, Quiet: quiet},
		settings: map[string]string{"HEALTH_PERIOD": "1s"},
	}
}

// start is a reliability stack whose CRM topic has the scale's breaker.
func (b breakerScale) start(t *testing.T) *reliabilityStack {
	t.Helper()
	return b.startMetered(t, false)
}

// startMetered is start with, when metered, the stack's AWS calls and
// invocations priced (r.meter).
func (b breakerScale) startMetered(t *testing.T, metered bool) *reliabilityStack {
	t.Helper()
	top := topology.Default().Clone()
	for i := range top.Topics {
		if top.Topics[i].Name == topology.CRM {
			top.Topics[i].Breaker = b.policy
		}
	}
	return startReliabilityStackMetered(t, b.settings, top, metered)
}

// outageWait is how long a breaker scenario waits for an outcome (the
// drain, an alert): generous, for a loaded CI machine, and short of the
// test binary's timeout.
func outageWait() time.Duration {
	if *reliabilityFull {
		return 15 * time.Minute
	}
	return 3 * time.Minute
}

// publishAt publishes ids at rate events per second (each publish in its
// own goroutine, as callers arrive), then publishes again, as a caller
// would, those ingest did not acknowledge (an invocation that failed or
// timed out on a loaded machine), and returns when every one is
// acknowledged or the wait is over.
func (r *reliabilityStack) publishAt(ids []string, rate float64, body func(id string) []byte) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	for _, id := range ids {
		<-tick.C
		wg.Go(func() { r.publishWith([]string{id}, 1, body) })
	}
	wg.Wait()
	r.publishUnacked(ids, body)
}

// publishUnacked publishes again, 4 at a time, the ids ingest has not
// acknowledged, until it has acknowledged every one or outageWait is over.
func (r *reliabilityStack) publishUnacked(ids []string, body func(id string) []byte) {
	deadline := time.Now().Add(outageWait())
	for time.Now().Before(deadline) {
		var unacked []string
		r.ledger.mu.Lock()
		for _, id := range ids {
			if !r.ledger.acked[id] {
				unacked = append(unacked, id)
			}
		}
		r.ledger.mu.Unlock()
		if len(unacked) == 0 {
			return
		}
		time.Sleep(time.Second)
		r.publishWith(unacked, 4, body)
	}
}

// latency is publish → first delivery to topic of the acknowledged events
// that reached it: p50 and p99.
func (l *accounts) latency(topic string, of func(id string) bool) (time.Duration, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lat []time.Duration
	for id := range l.acked {
		if at, ok := l.firstAt[topic][id]; ok && (of == nil || of(id)) {
			lat = append(lat, at.Sub(l.published[id]))
		}
	}
	if len(lat) == 0 {
		return 0, 0
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
}

// lastDelivery is when the last acknowledged event first reached topic.
func (l *accounts) lastDelivery(topic string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Time
	for id := range l.acked {
		if at := l.firstAt[topic][id]; at.After(last) {
			last = at
		}
	}
	return last
}

// alerts reads the stack's alert inbox as an operator would: GET /__alerts.
func (r *reliabilityStack) alerts(t *testing.T) []devstack.Alert {
	t.Helper()
	resp, err := http.Get(r.st.URL() + devstack.AlertsPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body struct {
		Alerts []devstack.Alert `json:"alerts"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return body.Alerts
}

// breakerAlerts counts the topic's subscriber-health alerts by kind, in
// the order they came.
func breakerAlerts(all []devstack.Alert, topic string) (map[string]int, []string) {
	kinds := map[string]int{}
	var order []string
	for _, a := range all {
		if a.Topic == topic && a.Kind != devstack.KindIncident {
			kinds[a.Kind]++
			order = append(order, a.Kind)
		}
	}
	return kinds, order
}

// recoveredAlert is the body of the topic's last subscriber_recovered
// alert.
func recoveredAlert(t *testing.T, all []devstack.Alert, topic string) subscriberhealth.Alert {
	t.Helper()
	var rec subscriberhealth.Alert
	for _, a := range all {
		if a.Topic == topic && a.Kind == subscriberhealth.KindRecovered {
			require.NoError(t, json.Unmarshal([]byte(a.Message), &rec))
		}
	}
	return rec
}

// breakerWatch samples a topic's health record (every 100 ms, with its own
// client): how often it was seen opening, the most failed probes of an
// outage, and whether it ever left closed.
type breakerWatch struct {
	mu       sync.Mutex
	opened   int
	maxLevel int
	unwell   bool
	stop     func()
}

func (r *reliabilityStack) watchBreaker(topic string) *breakerWatch {
	store := &dynamo.Breakers{Client: awslocal.NewDynamoDBClient(awslocal.NewConfig(), r.st.Emulators.DynamoDBEndpoint), Table: r.st.Resources.EventsTable}
	ctx, cancel := context.WithCancel(context.Background())
	w := &breakerWatch{}
	done := make(chan struct{})
	w.stop = func() { cancel(); <-done }
	go func() {
		defer close(done)
		last := subscriberhealth.Closed
		for ctx.Err() == nil {
			if h, err := store.Get(ctx, topic); err == nil {
				w.mu.Lock()
				if h.State == subscriberhealth.Open && last != subscriberhealth.Open {
					w.opened++
				}
				w.maxLevel = max(w.maxLevel, h.Level)
				w.unwell = w.unwell || h.State != subscriberhealth.Closed || h.Streak > 0
				w.mu.Unlock()
				last = h.State
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return w
}

func (w *breakerWatch) figures() (opened, maxLevel int, unwell bool) {
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.opened, w.maxLevel, w.unwell
}

// crmDown answers 503 to every CRM delivery while down() says so.
func crmDown(down func() bool) func(topic, _ string) (int, int) {
	return func(topic, _ string) (int, int) {
		if topic == topology.CRM && down() {
			return http.StatusServiceUnavailable, 0
		}
		return 0, 0
	}
}

// eventually waits for cond (checked every 200 ms) up to timeout.
func eventually(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, timeout, 200*time.Millisecond, what)
}

// outageRun is one run of scenario 8a's traffic on its own stack.
type outageRun struct {
	r                  *reliabilityStack
	outage             bool
	start, recovered   time.Time
	end                time.Time
	notifP50, notifP99 time.Duration
}

// traffic publishes n inquiries at rate; with an outage the CRM
// subscriber answers 503 until the last is published, then recovers. It
// returns once every event is delivered to both topics (an incident does
// not count) or the wait is over.
func (o *outageRun) traffic(n int, rate float64) {
	r := o.r
	var mu sync.Mutex
	down := o.outage
	r.st.Sink.Decide = crmDown(func() bool { mu.Lock(); defer mu.Unlock(); return down })
	o.start = time.Now()
	r.publishAt(ids("inq_rel8a", n), rate, inquiry)
	if rest := time.Duration(float64(n)/rate*float64(time.Second)) - time.Since(o.start); rest > 0 {
		time.Sleep(rest)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	o.recovered = time.Now()
	o.end = r.waitComplete(fanOut, outageWait()) // an incident ends the wait too: the test then fails on it
	o.notifP50, o.notifP99 = r.ledger.latency(topology.Notifications, nil)
}

// Scenario 8a: scenario 8's outage (CRM's subscriber answering 503 to
// every delivery for 10 minutes at 3 events/s) with the subscriber-health
// breaker on: no incidents, nothing lost, everything delivered soon after
// the subscriber is back, one subscriber_unhealthy and one
// subscriber_recovered alert at /__alerts, and notifications.events (the
// other topic of the same events) reported beside the same traffic without
// the outage, both runs at once on the same machine so they share its load.
func TestReliabilityBreakerOutage(t *testing.T) {
	scale := breakerAt(5 * time.Second)
	outage, rate := 10*time.Second, 10.0
	if *reliabilityFull {
		outage, rate = 10*time.Minute, 3
	}
	n := int(outage.Seconds() * rate)
	out := &outageRun{r: scale.startMetered(t, true), outage: true}
	base := &outageRun{r: scale.startMetered(t, true)}
	watch := out.r.watchBreaker(topology.CRM)
	var wg sync.WaitGroup
	wg.Go(func() { out.traffic(n, rate) })
	wg.Go(func() { base.traffic(n, rate) })
	wg.Wait()
	r := out.r
	f := r.ledger.figures("8a. the same outage with the subscriber-health breaker", fanOut, n, out.start, out.end, r.isIncident)
	t.Log(f.String())
	require.Equal(t, n, f.Acked)
	require.Zero(t, f.Incidents, "the breaker dead-letters nothing")
	require.Zero(t, f.Lost)
	// The outage ends once the subscriber stayed up for the quiet period
	// after its drain: then subscriber_recovered is sent.
	eventually(t, "subscriber_recovered at /__alerts", outageWait(), func() bool {
		kinds, _ := breakerAlerts(r.alerts(t), topology.CRM)
		return kinds[subscriberhealth.KindRecovered] > 0
	})
	time.Sleep(2 * time.Second) // time for another alert to show, were there one
	opened, level, _ := watch.figures()
	all := r.alerts(t)
	kinds, order := breakerAlerts(all, topology.CRM)
	rec := recoveredAlert(t, all, topology.CRM)
	hour := priceOutageHour(t, out.r, base.r, out.recovered.Sub(out.start))
	lastCRM := r.ledger.lastDelivery(topology.CRM)
	f.Note = fmt.Sprintf("%.0f events/s during the %s outage; CRM's breaker seen opening %d time(s), %d probe(s) failed; alerts: %s (outage %s, backlog %d); every CRM dispatch delivered %s after recovery; notifications.events p50 %s, p99 %s, beside the same traffic without the outage run alongside: p50 %s, p99 %s; %s",
		rate, outage, opened, level, strings.Join(order, ", "), rec.Outage, rec.Backlog, lastCRM.Sub(out.recovered).Round(100*time.Millisecond),
		out.notifP50.Round(time.Millisecond), out.notifP99.Round(time.Millisecond), base.notifP50.Round(time.Millisecond), base.notifP99.Round(time.Millisecond), hour)
	record(t, f)
	require.Zero(t, f.Duplicates)
	require.Equal(t, n, f.Delivered[topology.CRM], "every CRM dispatch delivered once the subscriber is back")
	require.Equal(t, map[string]int{subscriberhealth.KindUnhealthy: 1, subscriberhealth.KindRecovered: 1}, kinds, "one alert per transition: %v", order)
	require.Positive(t, rec.Backlog, "the recovered alert says what waited")
	require.Positive(t, opened, "the breaker opened")
	b := base.r.ledger.figures("baseline", fanOut, n, base.start, base.end, base.r.isIncident)
	require.Zero(t, b.Lost)
	require.Equal(t, n, b.Delivered[topology.Notifications])
}

// Scenario 8b: a flapping subscriber, CRM down 30 s and up 30 s in turn for
// 10 minutes at 3 events/s: a relapse within the quiet period is the same
// outage, so the whole flapping raises one subscriber_unhealthy and, once
// it stays up, one subscriber_recovered, however often the breaker opens;
// nothing is lost.
func TestReliabilityBreakerFlapping(t *testing.T) {
	phase, total, rate := 2*time.Second, 20*time.Second, 10.0
	scale := breakerAt(8 * time.Second) // longer than an up phase, as the default 2 minutes are than 30 s
	if *reliabilityFull {
		phase, total, rate = 30*time.Second, 10*time.Minute, 3
	}
	r := scale.start(t)
	watch := r.watchBreaker(topology.CRM)
	start := time.Now()
	var flips sync.Mutex
	down, cycles := true, 0
	r.st.Sink.Decide = crmDown(func() bool {
		flips.Lock()
		defer flips.Unlock()
		return down
	})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(phase)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				flips.Lock()
				down = !down
				if down {
					cycles++
				}
				flips.Unlock()
			}
		}
	})
	n := int(total.Seconds() * rate)
	r.publishAt(ids("inq_rel8b", n), rate, inquiry)
	if rest := total - time.Since(start); rest > 0 {
		time.Sleep(rest)
	}
	close(stop)
	wg.Wait()
	flips.Lock()
	down = false // up for good
	cycles++
	flips.Unlock()
	recovered := time.Now()
	end := r.waitDelivered(fanOut, outageWait())
	eventually(t, "subscriber_recovered at /__alerts", outageWait(), func() bool {
		kinds, _ := breakerAlerts(r.alerts(t), topology.CRM)
		return kinds[subscriberhealth.KindRecovered] > 0
	})
	time.Sleep(2 * time.Second)
	opened, level, _ := watch.figures()
	all := r.alerts(t)
	kinds, order := breakerAlerts(all, topology.CRM)
	f := r.ledger.figures(fmt.Sprintf("8b. a flapping subscriber, down %s and up %s in turn for %s, with the breaker", phase, phase, total), fanOut, n, start, end, r.isIncident)
	f.Note = fmt.Sprintf("%d down phases; CRM's breaker seen opening %d time(s), %d probe(s) failed; %d subscriber-health alert(s): %s; everything delivered %s after the last recovery",
		cycles, opened, level, len(order), strings.Join(order, ", "), r.ledger.lastDelivery(topology.CRM).Sub(recovered).Round(100*time.Millisecond))
	record(t, f)
	require.Equal(t, n, f.Acked)
	require.Zero(t, f.Lost)
	require.Zero(t, f.Duplicates)
	require.Equal(t, []string{subscriberhealth.KindUnhealthy, subscriberhealth.KindRecovered}, order, "no alert storm: one outage, one pair (the breaker opened %d times)", opened)
	require.Equal(t, map[string]int{subscriberhealth.KindUnhealthy: 1, subscriberhealth.KindRecovered: 1}, kinds)
}

// tenantInquiry is inquiry(id) from tenant.
func tenantInquiry(tenant string) func(id string) []byte {
	return func(id string) []byte {
		var ev map[string]any
		_ = json.Unmarshal(inquiry(id), &ev)
		ev["tenantId"] = tenant
		b, _ := json.Marshal(ev)
		return b
	}
}

// Scenario 8c: CRM's subscriber answers 410 Gone to one tenant's events
// and takes everyone else's: those dispatches are incidents as before the
// breaker (a 4xx is an answer, not an outage), the breaker stays closed
// and the other tenants' events are delivered.
func TestReliabilityBreakerOneTenantGone(t *testing.T) {
	r := breakerAt(5 * time.Second).start(t)
	watch := r.watchBreaker(topology.CRM)
	tenants := []string{"acme", "globex", "initech"}
	const gone = "globex"
	n := size(60, 900)
	tenantOf := map[string]string{}
	byTenant := map[string][]string{}
	for i, id := range ids("inq_rel8c", n) {
		tenantOf[id] = tenants[i%len(tenants)]
		byTenant[tenantOf[id]] = append(byTenant[tenantOf[id]], id)
	}
	r.st.Sink.Decide = func(topic, id string) (int, int) {
		if topic == topology.CRM && tenantOf[id] == gone {
			return http.StatusGone, 0
		}
		return 0, 0
	}
	isIncident := func(id, topic string) bool {
		_, err := r.incidents.Get(context.Background(), incident.ID(tenantOf[id]+"/"+id, topic))
		return err == nil
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, tenant := range tenants {
		wg.Go(func() {
			r.publishWith(byTenant[tenant], 4, tenantInquiry(tenant))
			r.publishUnacked(byTenant[tenant], tenantInquiry(tenant))
		})
	}
	wg.Wait()
	end := r.waitCompleteWith(fanOut, time.Duration(n/5+120)*time.Second, isIncident)
	time.Sleep(2 * time.Second)
	_, _, unwell := watch.figures()
	f := r.ledger.figures("8c. CRM answering 410 to one tenant's events of three, with the breaker", fanOut, n, start, end, isIncident)
	others := func(id string) bool { return tenantOf[id] != gone }
	p50, p99 := r.ledger.latency(topology.CRM, others)
	kinds, _ := breakerAlerts(r.alerts(t), topology.CRM)
	incidentAlerts := 0
	for _, a := range r.alerts(t) {
		if a.Kind == devstack.KindIncident && a.Topic == topology.CRM {
			incidentAlerts++
		}
	}
	f.Note = fmt.Sprintf("%d of %s's CRM dispatches are incidents (%d incident alerts); CRM's breaker stayed closed: %t; the other tenants' CRM deliveries p50 %s, p99 %s",
		f.Incidents, gone, incidentAlerts, !unwell, p50.Round(time.Millisecond), p99.Round(time.Millisecond))
	record(t, f)
	require.Equal(t, n, f.Acked)
	require.Zero(t, f.Lost)
	require.Equal(t, len(byTenant[gone]), f.Incidents, "every one of its CRM dispatches is an incident, and nothing else is")
	for _, id := range byTenant[gone] {
		require.True(t, isIncident(id, topology.CRM), "%s: an incident", id)
	}
	require.Equal(t, n-len(byTenant[gone]), f.Delivered[topology.CRM], "the other tenants' CRM events delivered")
	require.Equal(t, n, f.Delivered[topology.Notifications])
	require.False(t, unwell, "410 is an answer: the breaker never counted it")
	require.Empty(t, kinds, "no subscriber-health alert")
}
