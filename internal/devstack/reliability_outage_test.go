package devstack_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/devstack"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// bulkReplay runs one replay request page by page through the replay
// function, exactly as the state machine does: select a page, replay-one
// each incident (10 at a time, the Map's concurrency) under one request
// token, fold the outcomes into the summary.
func (r *reliabilityStack) bulkReplay(t *testing.T, req replay.Request) replay.Summary {
	t.Helper()
	token := "reliability-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	var totals *replay.Summary
	cursor := ""
	for {
		var page replay.SelectPage
		raw := r.invokeRaw(devstack.FunctionReplay, mustMarshal(operator.Call{Action: operator.ActionSelect, Request: &req, Cursor: cursor, PageSize: replay.DefaultPageSize}))
		require.NoError(t, json.Unmarshal(raw, &page), string(raw))
		outcomes := make([]replay.Outcome, len(page.IncidentIDs))
		sem := make(chan struct{}, 10)
		var wg sync.WaitGroup
		for i, id := range page.IncidentIDs {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				raw := r.invokeRaw(devstack.FunctionReplay, mustMarshal(operator.Call{Action: operator.ActionReplayOne, Request: &req, IncidentID: id, RequestToken: token}))
				if json.Unmarshal(raw, &outcomes[i]) != nil {
					outcomes[i] = replay.Outcome{IncidentID: id, Result: replay.ResultError, Error: "replay-one failed: " + string(raw)}
				}
			})
		}
		wg.Wait()
		sum := replay.Summarize(totals, page.Selected, outcomes, req.DryRun)
		totals = &sum
		if page.Done {
			return sum
		}
		cursor = page.Cursor
	}
}

// Scenario 8: a subscriber down (503 on every delivery) for 10 minutes
// while events keep arriving at 3 per second, then back. Measured: how much
// reaches the DLQ (incidents) and how much is still being retried when it
// recovers, and the time until everything is delivered after one bulk
// replay of its open incidents, started as soon as it is back. Deployed
// consumer backoff (5 s doubling, CRM's maxReceiveCount 5: a message
// dead-letters about 75 s after its first failure) in the full run;
// make test runs 10 s at 10 events/s with a 1 s backoff.
func TestReliabilitySubscriberOutage(t *testing.T) {
	settings := map[string]string{}
	outage, rate := 10*time.Second, 10.0
	if *reliabilityFull {
		settings["CONSUMER_BACKOFF_BASE"] = consume.DefaultBackoffBase.String()
		settings["CONSUMER_BACKOFF_CAP"] = consume.DefaultBackoffCap.String()
		outage, rate = 10*time.Minute, 3
	}
	r := startReliabilityStack(t, settings)
	r.st.Sink.Decide = func(topic, _ string) (int, int) {
		if topic == topology.CRM {
			return 503, 0 // down
		}
		return 0, 0
	}
	n := int(outage.Seconds() * rate)
	all := ids("inq_rel8", n)
	start := time.Now()
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	var wg sync.WaitGroup
	for _, id := range all {
		<-tick.C
		wg.Go(func() { r.publish([]string{id}, 1) })
	}
	tick.Stop()
	wg.Wait()
	if rest := outage - time.Since(start); rest > 0 {
		time.Sleep(rest)
	}

	// Back. A dead letter whose last receive failed just now is archived
	// within a second or two; then the operator replays the topic's open
	// incidents in one request.
	r.ledger.mu.Lock()
	deliveredBefore := len(r.ledger.delivered[topology.CRM])
	r.ledger.mu.Unlock()
	recovered := time.Now()
	r.st.Sink.Decide = nil
	time.Sleep(3 * time.Second)
	dead := 0
	for _, id := range all {
		if r.isIncident(id, topology.CRM) {
			dead++
		}
	}
	r.ledger.mu.Lock()
	retrying := len(r.ledger.acked) - dead - deliveredBefore
	r.ledger.mu.Unlock()
	replayStart := time.Now()
	sum := r.bulkReplay(t, replay.Request{Topic: topology.CRM, Status: "open", Limit: replay.MaxBulkLimit, Actor: "reliability", Note: "subscriber back"})
	replayTook := time.Since(replayStart)
	delivered := func(string, string) bool { return false } // drained means delivered, not an incident
	end := r.waitComplete(fanOut, time.Duration(n/10+300)*time.Second)
	time.Sleep(2 * time.Second)
	f := r.ledger.figures("8. a subscriber down for "+outage.String()+", then one bulk replay", fanOut, n, start, end, delivered)
	f.Note = fmt.Sprintf("%.0f events/s during the outage; at recovery %d CRM dispatches were dead letters (incidents) and %d still being retried; one bulk replay selected %d and replayed %d (%d skipped, %d errors) in %s; everything delivered %s after recovery",
		rate, dead, retrying, sum.Selected, sum.ReplayedCount, sum.SkippedCount, sum.ErrorCount, replayTook.Round(100*time.Millisecond), end.Sub(recovered).Round(100*time.Millisecond))
	record(t, f)
	require.Zero(t, f.Lost, "every event delivered once the subscriber is back")
	require.Zero(t, f.Duplicates, "none twice")
	require.Positive(t, dead, "the outage dead-lettered messages")
	require.Equal(t, dead, sum.ReplayedCount, "one replay took every dead letter")
	require.Zero(t, sum.ErrorCount)
}
