package suites_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/topology"
)

func visibility(top topology.Topology) time.Duration {
	if top.Topics == nil {
		top = topology.Default()
	}
	tp, _ := top.Topic(topology.CRM)
	return tp.VisibilityTimeout
}

// callerBooks count what ingest's callers saw while faults were injected.
type callerBooks struct {
	calls, retryable, acked, refused atomic.Int64
	mu                               sync.Mutex
	refusals                         []string
}

// publishRetrying publishes every id as a careful producer does: a function
// error is retryable (same id, short backoff, up to attempts tries); an
// answer is final — acknowledged, or a refusal with a code.
func (r *reliabilityStack) publishRetrying(ids []string, callers, attempts int, books *callerBooks) {
	inParallel(ids, callers, func(id string) {
		r.ledger.mu.Lock()
		r.ledger.published[id] = time.Now()
		r.ledger.mu.Unlock()
		for try := range attempts {
			books.calls.Add(1)
			out, err := r.lambda.Invoke(context.Background(), lambdaInvoke("ingest", inquiry(id)))
			if err != nil || out.FunctionError != nil {
				books.retryable.Add(1)
				time.Sleep(time.Duration(20*(try+1)) * time.Millisecond)
				continue
			}
			var res struct {
				Status string `json:"status"`
			}
			_ = json.Unmarshal(out.Payload, &res)
			switch res.Status {
			case "enqueued", "accepted", "duplicate_acknowledged":
				books.acked.Add(1)
				r.ledger.mu.Lock()
				r.ledger.acked[id] = true
				r.ledger.mu.Unlock()
			default:
				books.refused.Add(1)
				books.mu.Lock()
				books.refusals = append(books.refusals, string(out.Payload))
				books.mu.Unlock()
			}
			return
		}
	})
}

// Scenario 4: DynamoDB and SQS throttling at 10% of calls —
// ProvisionedThroughputExceededException on every DynamoDB call,
// TransactionConflict on the ingest transaction, SQS throttles on every SQS
// call — everywhere (ingest, consumers, sweeper, archiver), with no SDK
// retry in between: callers see only retryable errors (a function error:
// publish again) before the commit, never a refusal, and after it nothing
// acknowledged is lost or delivered twice.
//
// The faults are injected before the SDK's retryer, so no call is retried
// by the SDK as it would be in AWS. A throttled ChangeMessageVisibility is
// tried again within the invocation (else a failed message stays invisible
// for the queue's whole visibility timeout, 180 s deployed: the p99 this
// scenario had), and a throttled completion write within the invocation's
// remaining time (else the row's lease lapses and the side effect runs
// again: the duplicate it had), and one that fails for the whole
// invocation travels on in a copy of the message that records it without
// running the handler. make test runs it with a 12 s visibility
// timeout (the shortest the subscriber timeout allows) to stay short.
func TestReliabilityThrottling(t *testing.T) {
	var top topology.Topology
	if !*reliabilityFull {
		top = topology.Default().Clone()
		for i := range top.Topics {
			if slices.Contains(fanOut, top.Topics[i].Name) {
				top.Topics[i].ConsumerTimeout, top.Topics[i].VisibilityTimeout = 12*time.Second, 12*time.Second
			}
		}
	}
	r := startReliabilityStackWith(t, nil, top)
	r.faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "TransactWriteItems", Probability: 0.05, Err: awslocal.TransactionConflict(3, 0)})
	r.faults.Add(awslocal.Fault{Service: "DynamoDB", Probability: 0.1, Err: awslocal.Throttled()})
	r.faults.Add(awslocal.Fault{Service: "SQS", Probability: 0.1, Err: awslocal.Throttled()})
	n := size(200, 2000)
	books := &callerBooks{}
	start := time.Now()
	r.publishRetrying(ids("inq_rel4", n), 16, 20, books)
	end := r.waitComplete(fanOut, time.Duration(n/20+420)*time.Second)
	time.Sleep(2 * time.Second) // time for any second delivery to show
	f := r.ledger.figures("4. throttling at 10% (DynamoDB, SQS) and transaction conflicts", fanOut, n, start, end, r.isIncident)
	f.Note = fmt.Sprintf("%d publish calls: %d retryable errors (function errors, published again), %d refusals; %d faults injected, %d of them into ingest's transaction (retried inside ingest with jittered backoff, so callers rarely see one); "+
		"throttled ChangeMessageVisibility calls are retried within the invocation (visibility timeout %s, which a failed message waited out before) and throttled completion writes within its remaining time (then in a copy of the message)",
		books.calls.Load(), books.retryable.Load(), books.refused.Load(), r.faults.Injected(""), r.faults.Injected("TransactWriteItems"), visibility(top))
	record(t, f)
	require.Zero(t, books.refused.Load(), "a throttle is never a refusal: %v", books.refusals)
	require.Equal(t, n, f.Acked, "every event acknowledged after retries")
	require.Zero(t, f.Lost)
	require.Zero(t, f.Duplicates, "a throttled completion write never lets the side effect run twice")
}
