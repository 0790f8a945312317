package suites_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/observe/costmodel"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// outageRate is the rate an outage hour is priced at: scenario 8's.
const outageRate = 3

// priceOutageHour prices an hour of CRM's subscriber down at outageRate
// events/s, with the breaker and without it.
//
// With it, the price is what scenario 8a's outage run used beyond its
// baseline run (the same traffic without the outage, metered the same
// way): the failures that trip the breaker, its health record writes, the
// health function's event source mapping calls, the alerts, the probes and
// any held or re-queued copies, scaled from the time the subscriber was
// down to an hour. The one-off part (tripping, the alerts, the drain)
// counts once per 10 minutes that way: an upper bound.
//
// Without it, every event is retried up to CRM's maxReceiveCount, dead-
// lettered, archived as an incident and replayed once the subscriber is
// back, priced per event from the committed per-path figures
// (docs/cost-figures.json): a failed attempt is consumer-retry less
// stripe-webhook (less the 2 WRU the breaker's streak adds), dead-lettering
// and archiving is dlq-to-incident less stripe-webhook, and the replay
// path. Those paths run on billing.events, a FIFO topic; crm.sync is
// standard, so their FIFO requests are priced as standard ones.
func priceOutageHour(t *testing.T, out, base *reliabilityStack, down time.Duration) string {
	t.Helper()
	prices := costmodel.USEast1
	uo, co := out.meter.Snapshot()
	ub, cb := base.meter.Snapshot()
	extra := uo
	extra.Add(ub.Scale(-1))

	committed, err := costmodel.ReadReport(costFigures)
	require.NoError(t, err)
	path := func(name string) costmodel.Units {
		for _, p := range committed.Paths {
			if p.Name == name {
				u := p.Units
				u.SQSRequests, u.SQSFIFORequests = u.SQSRequests+u.SQSFIFORequests, 0
				return u
			}
		}
		require.Failf(t, "no committed cost path", "%s in %s", name, costFigures)
		return costmodel.Units{}
	}
	stripe, retry := path("stripe-webhook"), path("consumer-retry")
	// The measured invocations carry no duration: price them at a consumer
	// invocation's GB-seconds on the retry path.
	extra.LambdaGBSeconds = extra.LambdaInvocations * retry.LambdaGBSeconds / retry.LambdaInvocations

	failed := retry
	failed.Add(stripe.Scale(-1))
	failed.WRU -= 2 // the breaker's streak write and reset, which an unguarded topic does not make
	deadLetter := path("dlq-to-incident")
	deadLetter.Add(stripe.Scale(-1))
	mrc := 0
	for _, tp := range topology.Default().Topics {
		if tp.Name == topology.CRM {
			mrc = tp.MaxReceiveCount
		}
	}
	perEvent := failed.Scale(float64(mrc - 1))
	perEvent.Add(deadLetter)
	perEvent.Add(path("replay"))
	events := outageRate * 3600
	without := prices.Total(perEvent) * float64(events)

	var calls []string
	ops := map[string]bool{}
	for op := range co {
		ops[op] = true
	}
	for op := range cb {
		ops[op] = true
	}
	for op := range ops {
		if d := co[op] - cb[op]; d != 0 {
			calls = append(calls, fmt.Sprintf("%s %+d", op, d))
		}
	}
	slices.Sort(calls)
	with := prices.Total(extra) * float64(time.Hour) / float64(down)
	label := ""
	if !*reliabilityFull {
		label = " (make-test size: the breaker's clock is compressed to seconds, so the hour's figure with it is not representative; make reliability runs the deployed policy)"
	}
	return fmt.Sprintf("an outage hour at %d events/s (%s list prices): $%.4f with the breaker (this run beside its baseline, %s down, scaled to the hour; calls beyond the baseline: %s; %+.0f invocations) against $%.2f without it (%d events × (%d failed attempts + dead letter and incident + replay) at $%.6f each, from docs/cost-figures.json)%s",
		outageRate, prices.Region, with, down.Round(time.Second), strings.Join(calls, ", "), extra.LambdaInvocations, without, events, mrc-1, prices.Total(perEvent), label)
}
