package suites_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// replayExecution is one execution of the replay state machine.
type replayExecution struct {
	ARN     string
	History int // events
	Output  string
}

// replayStateMachine runs one replay request through the local stack's
// replay state machine — the definition the CDK app synthesizes, served by
// the stack's Step Functions endpoint and called with the SDK's sfn
// client, its Lambda tasks invoking the local replay function: select a
// page, replay-one each incident (10 at a time), summarize, and every 10
// pages hand over to a new execution. It follows the chain as evp does and
// returns the last execution's summary and every execution, each checked:
// it succeeded within the history quota, and each but the last handed
// over to the next.
func (r *reliabilityStack) replayStateMachine(t *testing.T, req replay.Request) (replay.Summary, []replayExecution) {
	t.Helper()
	ctx := context.Background()
	c := awslocal.NewSFNClient(awslocal.NewConfig(), r.st.URL()+devstack.StepFunctionsPath)
	start, err := c.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(devstack.ReplayStateMachineARN()),
		Name: aws.String("reliability-" + strconv.FormatInt(time.Now().UnixNano(), 36)), Input: aws.String(string(mustMarshal(req)))})
	require.NoError(t, err)
	var execs []replayExecution
	for exec := aws.ToString(start.ExecutionArn); exec != ""; {
		d := r.waitExecution(t, c, exec)
		require.Equal(t, sfntypes.ExecutionStatusSucceeded, d.Status, "execution %s: %s %s", exec, aws.ToString(d.Error), aws.ToString(d.Cause))
		ex := replayExecution{ARN: exec, Output: aws.ToString(d.Output)}
		p := sfn.NewGetExecutionHistoryPaginator(c, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(exec), MaxResults: 1000})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			require.NoError(t, err)
			ex.History += len(page.Events)
		}
		require.LessOrEqual(t, ex.History, 25000, "execution %s's history", exec)
		execs = append(execs, ex)
		var out struct {
			ContinuedAs string `json:"continuedAs"`
		}
		require.NoError(t, json.Unmarshal([]byte(ex.Output), &out))
		exec = out.ContinuedAs
	}
	var sum replay.Summary
	require.NoError(t, json.Unmarshal([]byte(execs[len(execs)-1].Output), &sum))
	return sum, execs
}

// waitExecution polls an execution until it ends.
func (r *reliabilityStack) waitExecution(t *testing.T, c *sfn.Client, exec string) *sfn.DescribeExecutionOutput {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Minute); ; {
		d, err := c.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(exec)})
		require.NoError(t, err)
		if d.Status != sfntypes.ExecutionStatusRunning {
			return d
		}
		require.True(t, time.Now().Before(deadline), "execution %s still running", exec)
		time.Sleep(50 * time.Millisecond)
	}
}

// Scenario 8: a subscriber down (503 on every delivery) for 10 minutes
// while events keep arriving at 3 per second, then back. Measured: how much
// reaches the DLQ (incidents) and how much is still being retried when it
// recovers, and the time until everything is delivered after one bulk
// replay of its open incidents, started as soon as it is back. Deployed
// consumer backoff (5 s doubling, CRM's maxReceiveCount 5: a message
// dead-letters about 75 s after its first failure) in the full run;
// make test runs 10 s at 10 events/s with a 1 s backoff. It runs without
// the topic's subscriber-health breaker (the platform before it): the
// baseline of the breaker's scenarios.
func TestReliabilitySubscriberOutage(t *testing.T) {
	settings := map[string]string{}
	outage, rate := 10*time.Second, 10.0
	if *reliabilityFull {
		settings["CONSUMER_BACKOFF_BASE"] = consume.DefaultBackoffBase.String()
		settings["CONSUMER_BACKOFF_CAP"] = consume.DefaultBackoffCap.String()
		outage, rate = 10*time.Minute, 3
	}
	r := startReliabilityStackWith(t, settings, withoutBreaker(topology.CRM))
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
	// The scenario is about replaying what the outage dead-lettered: on a
	// loaded machine the first message may not have used up its receives
	// when the outage time is over, so the subscriber stays down until
	// one has (bounded).
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if slices.ContainsFunc(all, func(id string) bool { return r.isIncident(id, topology.CRM) }) {
			break
		}
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
	sum, execs := r.replayStateMachine(t, replay.Request{Topic: topology.CRM, Status: "open", Limit: replay.MaxBulkLimit, Actor: "reliability", Note: "subscriber back"})
	replayTook := time.Since(replayStart)
	end := r.waitDelivered(fanOut, time.Duration(n/10+300)*time.Second) // drained: delivered, not an incident
	time.Sleep(2 * time.Second)
	f := r.ledger.figures("8. a subscriber down for "+outage.String()+", then one bulk replay", fanOut, n, start, end, func(string, string) bool { return false })
	f.Note = fmt.Sprintf("%.0f events/s during the outage; at recovery %d CRM dispatches were dead letters (incidents) and %d still being retried; one bulk replay (the replay state machine's definition, %d execution(s)) selected %d and replayed %d (%d skipped, %d errors) in %s; everything delivered %s after recovery",
		rate, dead, retrying, len(execs), sum.Selected, sum.ReplayedCount, sum.SkippedCount, sum.ErrorCount, replayTook.Round(100*time.Millisecond), end.Sub(recovered).Round(100*time.Millisecond))
	record(t, f)
	require.Zero(t, f.Lost, "every event delivered once the subscriber is back")
	require.Zero(t, f.Duplicates, "none twice")
	require.Positive(t, dead, "the outage dead-lettered messages")
	require.GreaterOrEqual(t, sum.ReplayedCount, dead, "one replay took every dead letter (and any dead-lettered since)")
	require.Zero(t, sum.ErrorCount)
}

// withoutBreaker is the default topology with the topic's subscriber-health
// breaker turned off.
func withoutBreaker(topic string) topology.Topology {
	top := topology.Default()
	for i := range top.Topics {
		if top.Topics[i].Name == topic {
			top.Topics[i].Breaker.Off = true
		}
	}
	return top
}
