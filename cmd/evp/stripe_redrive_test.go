package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/devapi"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
)

// redriveFixture is a local stack with its stripe-eventbridge DLQ.
type redriveFixture struct {
	st     *devstack.Stack
	dlq    string
	events *dynamo.Events
}

func newRedriveFixture(t *testing.T) *redriveFixture {
	t.Helper()
	st := startStack(t)
	dlq, err := st.StripeEventBridgeDLQ(context.Background())
	require.NoError(t, err)
	return &redriveFixture{st: st, dlq: dlq, events: &dynamo.Events{Client: st.Clients.DynamoDB, Table: st.Resources.EventsTable}}
}

// deadLetter puts a Stripe event in the DLQ in shape, as the rule or the
// function's asynchronous invocation does on a stage.
func (f *redriveFixture) deadLetter(t *testing.T, stripeEvent string, shape stripe.DeadLetterShape) {
	t.Helper()
	ev, ok := stripe.PartnerEvent([]byte(stripeEvent), devapi.StripeEventSource, "eb-"+strconv.FormatInt(time.Now().UnixNano(), 36), time.Now())
	require.True(t, ok)
	_, err := f.st.DeadLetterStripeEvent(context.Background(), ev, shape, "webhook: 503 ingest_unavailable: ingest is busy or timed out; retry later")
	require.NoError(t, err)
}

// depth is the DLQ's visible and in-flight message counts.
func (f *redriveFixture) depth(t *testing.T) (visible, inFlight int) {
	t.Helper()
	out, err := f.st.Clients.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(f.dlq),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	require.NoError(t, err)
	visible, err = strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	require.NoError(t, err)
	inFlight, err = strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	require.NoError(t, err)
	return visible, inFlight
}

func (f *redriveFixture) redrive(t *testing.T, args ...string) (redriveSummary, error) {
	t.Helper()
	out, err := run(t, context.Background(), "", append([]string{"stripe", "redrive-eventbridge", "--url", f.st.URL(), "--queue", f.dlq, "--json"}, args...)...)
	var sum redriveSummary
	require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
	return sum, err
}

// byEvent is a summary's items by Stripe event id (unreadable ones under
// their code).
func byEvent(s redriveSummary) map[string][]redriveItem {
	m := map[string][]redriveItem{}
	for _, it := range s.Messages {
		k := it.EventID
		if k == "" {
			k = it.Code
		}
		m[k] = append(m[k], it)
	}
	return m
}

func stripeInvoice(id string, extra string) string {
	return fmt.Sprintf(`{"id":%q,"object":"event","type":"invoice.paid","created":1700000000,%s"data":{"object":{"id":"in_%s","object":"invoice","metadata":{}}}}`, id, extra, id)
}

// `evp stripe redrive-eventbridge` drains the stripe-eventbridge DLQ into
// the function: both shapes are redriven and deleted, an event dead-lettered
// twice is stored once (the second copy a duplicate), an event the function
// refuses for good is reported with its code and deleted, an event it still
// fails on (an unmapped Connect account) and a message that is neither shape
// stay in the queue, visible again, with their reasons; the exit status says
// something is left. A dry run before changes nothing.
func TestStripeRedriveEventBridgeDLQ(t *testing.T) {
	t.Parallel()
	f := newRedriveFixture(t)
	ctx := context.Background()

	f.deadLetter(t, stripeInvoice("evt_redrive_rule", ""), stripe.ShapeRule)
	f.deadLetter(t, stripeInvoice("evt_redrive_record", ""), stripe.ShapeFailureRecord)
	f.deadLetter(t, stripeInvoice("evt_redrive_rule", ""), stripe.ShapeFailureRecord) // the rule's and the function's copy of one event
	f.deadLetter(t, `{"id":"evt_redrive_thin","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered","created":"2024-09-17T06:20:52.246Z"}`, stripe.ShapeRule)
	f.deadLetter(t, stripeInvoice("evt_redrive_unmapped", `"account":"acct_not_mapped",`), stripe.ShapeFailureRecord)
	_, err := f.st.Clients.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(f.dlq), MessageBody: aws.String(`{"hello":"world"}`)})
	require.NoError(t, err)
	visible, _ := f.depth(t)
	require.Equal(t, 6, visible)

	// A dry run reads and classifies; nothing is invoked or deleted, and
	// every message is visible again when it ends.
	sum, err := f.redrive(t, "--dry-run")
	require.ErrorIs(t, err, errSilent, "a message would be left")
	require.True(t, sum.DryRun)
	require.Len(t, sum.Messages, 6)
	require.Equal(t, map[string]int{redriveWould: 5, redriveUnreadable: 1}, sum.Counts)
	require.Zero(t, sum.Deleted)
	visible, inFlight := f.depth(t)
	require.Equal(t, [2]int{6, 0}, [2]int{visible, inFlight}, "a dry run leaves the queue as it was")
	_, _, err = f.events.Load(ctx, "evt_redrive_rule")
	require.Error(t, err, "a dry run stores nothing")

	sum, err = f.redrive(t)
	require.ErrorIs(t, err, errSilent, "messages are left: the exit status says so")
	require.Len(t, sum.Messages, 6)
	got := byEvent(sum)
	outcomes := func(id string) []string {
		var out []string
		for _, it := range got[id] {
			out = append(out, it.Outcome)
			require.Equal(t, it.Outcome != redriveFailed && it.Outcome != redriveUnreadable, it.Deleted, "%s %s", id, it.Outcome)
		}
		return out
	}
	require.ElementsMatch(t, []string{string(envelope.StatusEnqueued), string(envelope.StatusDuplicate)}, outcomes("evt_redrive_rule"),
		"one event dead-lettered twice is stored once: the second copy is a duplicate")
	require.ElementsMatch(t, []stripe.DeadLetterShape{stripe.ShapeRule, stripe.ShapeFailureRecord}, []stripe.DeadLetterShape{
		stripe.DeadLetterShape(got["evt_redrive_rule"][0].Shape), stripe.DeadLetterShape(got["evt_redrive_rule"][1].Shape)})
	require.Equal(t, []string{string(envelope.StatusEnqueued)}, outcomes("evt_redrive_record"))
	require.Equal(t, []string{redriveRefused}, outcomes("evt_redrive_thin"), "refused for good: reported and deleted")
	require.Equal(t, "invalid_event", got["evt_redrive_thin"][0].Code)
	require.Equal(t, []string{redriveFailed}, outcomes("evt_redrive_unmapped"), "the function still fails: kept")
	require.Equal(t, "unknown_account", got["evt_redrive_unmapped"][0].Code)
	require.Equal(t, []string{redriveUnreadable}, outcomes(string(stripe.CodeDeadLetterUnknownShape)), "neither shape: kept with its reason")
	require.Equal(t, [2]int{4, 2}, [2]int{sum.Deleted, sum.Left})

	for _, id := range []string{"evt_redrive_rule", "evt_redrive_record"} {
		rec, _, err := f.events.Load(ctx, id)
		require.NoError(t, err, id)
		require.Equal(t, "stripe.invoice.paid", rec.Event.Type)
	}
	_, _, err = f.events.Load(ctx, "evt_redrive_unmapped")
	require.Error(t, err)
	visible, inFlight = f.depth(t)
	require.Equal(t, [2]int{2, 0}, [2]int{visible, inFlight}, "what is left is visible again at once (for the next run and the alarm)")

	// --limit stops early, and says so.
	sum, err = f.redrive(t, "--limit", "1")
	require.ErrorIs(t, err, errSilent)
	require.Len(t, sum.Messages, 1)
	require.True(t, sum.LimitReached)

	// The text summary: a line per message, then the counts.
	out, err := run(t, ctx, "", "stripe", "redrive-eventbridge", "--url", f.st.URL(), "--queue", f.dlq)
	require.ErrorIs(t, err, errSilent)
	require.Regexp(t, `evt_redrive_unmapped\s+failed\s+kept\s+lambda-failure-record\s+unknown_account: `, out)
	require.Regexp(t, `-\s+unreadable\s+kept\s+-\s+unknown_shape: `, out)
	require.Contains(t, out, "2 messages: 0 deleted, 2 left; failed 1; unreadable 1")
}

// Two redrives at once never hand one message to the function twice: a
// message one holds is invisible to the other. Every message is redriven
// by exactly one of them.
func TestStripeRedriveEventBridgeConcurrentRunsShareNoMessage(t *testing.T) {
	t.Parallel()
	f := newRedriveFixture(t)
	const n = 12
	for i := range n {
		f.deadLetter(t, stripeInvoice(fmt.Sprintf("evt_redrive_c%02d", i), ""), []stripe.DeadLetterShape{stripe.ShapeRule, stripe.ShapeFailureRecord}[i%2])
	}
	var (
		wg   sync.WaitGroup
		sums [2]redriveSummary
		errs [2]error
	)
	for i := range sums {
		wg.Go(func() { sums[i], errs[i] = f.redrive(t) })
	}
	wg.Wait()
	seen := map[string]int{}
	for i, s := range sums {
		require.NoError(t, errs[i])
		for _, it := range s.Messages {
			seen[it.MessageID]++
			require.Equal(t, string(envelope.StatusEnqueued), it.Outcome, "no event redriven twice: never a duplicate")
			require.True(t, it.Deleted)
		}
	}
	require.Len(t, seen, n)
	for id, c := range seen {
		require.Equal(t, 1, c, id)
	}
	visible, inFlight := f.depth(t)
	require.Equal(t, [2]int{0, 0}, [2]int{visible, inFlight})
}

// An empty DLQ is a run that ends at once, with nothing to do.
func TestStripeRedriveEventBridgeEmptyQueueEnds(t *testing.T) {
	t.Parallel()
	f := newRedriveFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := run(t, ctx, "", "stripe", "redrive-eventbridge", "--url", f.st.URL(), "--queue", f.dlq)
	require.NoError(t, err, out)
	require.Contains(t, out, "0 messages: 0 deleted, 0 left")
	_, err = run(t, ctx, "", "stripe", "redrive-eventbridge", "--url", "http://127.0.0.1:1")
	require.ErrorContains(t, err, "is `make dev` running")
}
