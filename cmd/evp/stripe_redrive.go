package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/siteswarm/eventplatform/internal/devapi"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/stripeeventbridgefn"
)

// Outcomes of a redriven dead letter (redriveItem.Outcome). Ingest's
// statuses (enqueued, duplicate_acknowledged, unrouted) and acknowledged
// (webhook.StatusAcknowledged) are outcomes too: the event is stored (or
// needs no storing) and its message deleted.
const (
	// redriveRefused: the function refused the event for good (and logged
	// it with its code): the message is deleted, as the function drops
	// such an event when it first arrives.
	redriveRefused = string(stripe.OutcomeRefused)
	// redriveFailed: the function failed (a retryable answer) or could not
	// be invoked: the message stays.
	redriveFailed = "failed"
	// redriveUnreadable: the message is neither shape (its code says
	// why): it stays, for an operator.
	redriveUnreadable = "unreadable"
	// redriveWould: --dry-run's outcome for a message it would redrive.
	redriveWould = "would_redrive"
)

const (
	// redriveHold is how long a received message stays invisible to other
	// consumers (another redrive) while this one holds it; redriveBudget
	// is what one invocation may take (the function's timeout and margin):
	// a message is held again before its invocation when less is left.
	redriveHold   = 2 * time.Minute
	redriveBudget = stripeeventbridgefn.FunctionTimeout + 15*time.Second
	// redriveWait is the receive's long poll: an empty answer after it
	// means nothing is visible, and the run ends.
	redriveWait = 1
)

// redriveItem is one message's line of the summary.
type redriveItem struct {
	MessageID string `json:"messageId"`
	Shape     string `json:"shape,omitempty"`
	// EventID and Type are the Stripe event's.
	EventID string `json:"eventId,omitempty"`
	Type    string `json:"type,omitempty"`
	Outcome string `json:"outcome"`
	// Code and Reason say why a message was refused, failed or is
	// unreadable.
	Code    string `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Deleted bool   `json:"deleted"`
}

// redriveSummary is what a run did.
type redriveSummary struct {
	Queue    string         `json:"queue"`
	Function string         `json:"function"`
	DryRun   bool           `json:"dryRun"`
	Messages []redriveItem  `json:"messages"`
	Counts   map[string]int `json:"counts"`
	Deleted  int            `json:"deleted"`
	Left     int            `json:"left"`
	// LimitReached: --limit stopped the run before the queue was empty.
	LimitReached bool `json:"limitReached"`
}

// redriver drains the stripe-eventbridge DLQ into the function.
type redriver struct {
	sqs      *sqs.Client
	lambda   *lambda.Client
	queue    string
	function string
	dryRun   bool
	limit    int
}

func newStripeRedriveCmd() *cobra.Command {
	var (
		url, stage, profile, region, queue string
		dryRun, asJSON                     bool
		limit                              int
	)
	cmd := &cobra.Command{
		Use:   "redrive-eventbridge",
		Short: "Redrive the stripe-eventbridge DLQ: hand each dead-lettered Stripe event to the function again",
		Long: "Receives the messages of the stripe-eventbridge DLQ (evp-<stage>-stripe-eventbridge-dlq with --stage, the\n" +
			"local stack's otherwise) and invokes the stripe-eventbridge function synchronously with each one's\n" +
			"EventBridge event, as the rule on the partner bus would. It reads both shapes the queue receives: the\n" +
			"EventBridge event the rule dead-lettered, and the Lambda failure record (requestPayload is the event) of\n" +
			"the function's asynchronous invocation.\n\n" +
			"A message is deleted when the event is stored (enqueued, unrouted, or duplicate_acknowledged: stored\n" +
			"meanwhile, by the webhook or an earlier redrive) or refused for good by the function (it logs the refusal\n" +
			"with its code; redriving it again would refuse it again). It stays in the queue when the function fails\n" +
			"(ingest unavailable, an unmapped Connect account: fix the cause and run again) and when it is neither\n" +
			"shape (unreadable, with a code: not_json, unknown_shape, not_stripe_source, not_a_stripe_event).\n\n" +
			"Each received message is hidden from other consumers while this run holds it (a concurrent redrive never\n" +
			"gets it), and the messages left are made visible again at the end. The run ends when a receive comes\n" +
			"back empty, or after --limit messages. It prints one line per message (message id, Stripe event id,\n" +
			"outcome) and the counts; it exits 1 when a message is left, or --limit stopped it first.\n\n" +
			"--dry-run reads and classifies the messages without invoking or deleting anything.",
		Example: "  evp stripe redrive-eventbridge --stage prod --dry-run\n" +
			"  evp stripe redrive-eventbridge --stage prod\n" +
			"  evp stripe redrive-eventbridge --stage prod --limit 1 --json\n" +
			"  evp stripe redrive-eventbridge        # the local stack's DLQ",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: 0 (no limit) or more", limit)
			}
			ctx := cmd.Context()
			r := &redriver{dryRun: dryRun, limit: limit}
			if stage == "" {
				if profile != "" || region != "" {
					return errors.New("--profile and --region need --stage")
				}
				cfg := devapi.Config()
				r.sqs = devapi.SQSClient(cfg, strings.TrimRight(url, "/")+devapi.SQSPath)
				r.lambda = devapi.LambdaClient(cfg, url)
				r.function = devapi.StripeEventBridgeFunction
				if queue == "" {
					queue = devapi.StripeEventBridgeDLQ
				}
			} else {
				cfg, err := awsConfig(ctx, profile, region)
				if err != nil {
					return fmt.Errorf("aws config: %w", err)
				}
				r.sqs, r.lambda = sqs.NewFromConfig(cfg), lambda.NewFromConfig(cfg)
				prefix := "evp-" + stage
				r.function = prefix + "-" + stripeeventbridgefn.Name
				if queue == "" {
					queue = stripeeventbridgefn.DLQName(prefix)
				}
			}
			var err error
			if r.queue, err = queueURL(ctx, r.sqs, queue); err != nil {
				where := "is the stage's stripeEventBridgeSource set, and are --profile/--region right?"
				if stage == "" {
					where = "is `make dev` running at " + url + "?"
				}
				return fmt.Errorf("the stripe-eventbridge DLQ %s: %w (%s)", queue, err, where)
			}
			sum, err := r.run(ctx)
			if asJSON {
				if jerr := writeJSON(cmd.OutOrStdout(), sum); jerr != nil {
					return jerr
				}
			} else {
				renderRedrive(cmd.OutOrStdout(), sum)
			}
			if err != nil {
				return err
			}
			if sum.Left > 0 || sum.LimitReached {
				return errSilent
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "url", localStackURL(), "the local stack's URL ($EVP_URL)")
	f.StringVar(&stage, "stage", "", "act on a deployed stage (its evp-<stage>-stripe-eventbridge-dlq and function)")
	f.StringVar(&profile, "profile", "", "AWS shared-config profile for --stage")
	f.StringVar(&region, "region", "", "AWS region for --stage")
	f.StringVar(&queue, "queue", "", "the DLQ's name or URL (default: the stage's, or the local stack's "+devapi.StripeEventBridgeDLQ+")")
	f.BoolVar(&dryRun, "dry-run", false, "read and classify the messages; invoke and delete nothing")
	f.IntVar(&limit, "limit", 0, "redrive at most this many messages (0: until the queue is empty)")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return cmd
}

// queueURL is q's URL: q itself when it is one, else GetQueueUrl's.
func queueURL(ctx context.Context, c *sqs.Client, q string) (string, error) {
	if strings.HasPrefix(q, "https://") || strings.HasPrefix(q, "http://") {
		return q, nil
	}
	out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q)})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.QueueUrl), nil
}

// held is a message this run received and has not deleted: its latest
// receipt handle (to make it visible again at the end) and until when it
// is hidden.
type held struct {
	receipt string
	until   time.Time
	left    bool
}

// run receives until a receive is empty (or the limit), handles each new
// message, and makes the messages it leaves visible again. The error is
// an SQS failure that stopped the run; what it did so far is in the
// summary.
func (r *redriver) run(ctx context.Context) (redriveSummary, error) {
	sum := redriveSummary{Queue: r.queue, Function: r.function, DryRun: r.dryRun, Counts: map[string]int{}, Messages: []redriveItem{}}
	seen := map[string]*held{}
	err := func() error {
		for {
			want := int32(10)
			if r.limit > 0 {
				if len(sum.Messages) >= r.limit {
					sum.LimitReached = true
					return nil
				}
				want = int32(min(10, r.limit-len(sum.Messages)))
			}
			out, err := r.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(r.queue), MaxNumberOfMessages: want, WaitTimeSeconds: redriveWait,
				VisibilityTimeout: int32(redriveHold / time.Second), MessageAttributeNames: []string{"All"},
			})
			if err != nil {
				return fmt.Errorf("receive from %s: %w", r.queue, err)
			}
			if len(out.Messages) == 0 {
				return nil
			}
			until := time.Now().Add(redriveHold)
			fresh := 0
			for _, m := range out.Messages {
				id := aws.ToString(m.MessageId)
				if h, ok := seen[id]; ok {
					// Back after its hold expired in a long run: already
					// reported; keep the new receipt to release it at the end.
					h.receipt, h.until = aws.ToString(m.ReceiptHandle), until
					continue
				}
				fresh++
				h := &held{receipt: aws.ToString(m.ReceiptHandle), until: until}
				seen[id] = h
				item := r.handle(ctx, m, h)
				h.left = !item.Deleted
				sum.Messages = append(sum.Messages, item)
			}
			if fresh == 0 {
				// Only messages this run already reported: nothing new is
				// visible, and the run ends (it never spins on its own
				// leftovers).
				return nil
			}
		}
	}()
	for _, it := range sum.Messages {
		sum.Counts[it.Outcome]++
		if it.Deleted {
			sum.Deleted++
		} else {
			sum.Left++
		}
	}
	// What stays is visible again at once: for the next run, and for the
	// alarm, which counts visible messages.
	var release []sqstypes.ChangeMessageVisibilityBatchRequestEntry
	for _, h := range seen {
		if h.left {
			release = append(release, sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(fmt.Sprint(len(release))), ReceiptHandle: aws.String(h.receipt)})
		}
	}
	for len(release) > 0 {
		n := min(10, len(release))
		out, rerr := r.sqs.ChangeMessageVisibilityBatch(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(r.queue), Entries: release[:n]})
		if rerr == nil && len(out.Failed) > 0 {
			rerr = fmt.Errorf("%d of %d refused: %s", len(out.Failed), n, aws.ToString(out.Failed[0].Message))
		}
		if rerr != nil {
			err = errors.Join(err, fmt.Errorf("make the messages left visible again (they will be after %s): %w", redriveHold, rerr))
			break
		}
		release = release[n:]
	}
	return sum, err
}

// handle redrives one message: read it, invoke the function with its
// event, delete it when the function stored (or refused for good) the
// event.
func (r *redriver) handle(ctx context.Context, m sqstypes.Message, h *held) redriveItem {
	item := redriveItem{MessageID: aws.ToString(m.MessageId)}
	dl, err := stripe.ReadDeadLetter([]byte(aws.ToString(m.Body)))
	var de *stripe.DeadLetterError
	if errors.As(err, &de) {
		item.Outcome, item.Code, item.Reason = redriveUnreadable, string(de.Code), de.Message
		return item
	}
	item.Shape, item.EventID, item.Type = string(dl.Shape), dl.EventID, dl.Type
	if r.dryRun {
		item.Outcome = redriveWould
		return item
	}
	if time.Until(h.until) < redriveBudget {
		// Hold it for this invocation, so no other consumer gets it while
		// the function runs.
		if _, err := r.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(r.queue), ReceiptHandle: aws.String(h.receipt), VisibilityTimeout: int32(redriveHold / time.Second),
		}); err != nil {
			item.Outcome, item.Code, item.Reason = redriveFailed, "hold_failed", err.Error()
			return item
		}
		h.until = time.Now().Add(redriveHold)
	}
	payload, err := json.Marshal(dl.Event)
	if err != nil {
		item.Outcome, item.Code, item.Reason = redriveFailed, "invoke_failed", err.Error()
		return item
	}
	ictx, cancel := context.WithTimeout(ctx, redriveBudget)
	defer cancel()
	res, err := r.lambda.Invoke(ictx, &lambda.InvokeInput{
		FunctionName: aws.String(r.function), Payload: payload, InvocationType: lambdatypes.InvocationTypeRequestResponse,
	})
	switch {
	case err != nil:
		item.Outcome, item.Code, item.Reason = redriveFailed, "invoke_failed", err.Error()
		return item
	case res.FunctionError != nil:
		item.Outcome = redriveFailed
		item.Code, item.Reason = functionErrorCode(res.Payload)
		return item
	}
	var o stripe.Outcome
	if err := json.Unmarshal(res.Payload, &o); err != nil || o.Status == "" {
		item.Outcome, item.Code, item.Reason = redriveFailed, "unknown_answer", "the function answered "+clip(string(res.Payload), 200)
		return item
	}
	item.Outcome = string(o.Status)
	if o.EventID != "" {
		item.EventID = o.EventID
	}
	if o.Status == stripe.OutcomeRefused {
		item.Code, item.Reason = string(o.Code), o.Message
	}
	if _, err := r.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.queue), ReceiptHandle: aws.String(h.receipt)}); err != nil {
		// The event is stored; the message stays, and its next redrive is
		// a duplicate.
		item.Code, item.Reason = "delete_failed", err.Error()
		return item
	}
	item.Deleted = true
	return item
}

// functionErrorCode reads the code and message of the function's error
// result: a *webhook.Error's message ("webhook: 503 ingest_unavailable:
// …"), else the runtime's errorType.
func functionErrorCode(payload []byte) (code, reason string) {
	var fe functionError
	if json.Unmarshal(payload, &fe) != nil || fe.Message == "" {
		return "function_error", clip(string(payload), 200)
	}
	if rest, ok := strings.CutPrefix(fe.Message, "webhook: "); ok {
		if _, after, ok := strings.Cut(rest, " "); ok {
			if c, _, ok := strings.Cut(after, ":"); ok && c != "" && !strings.ContainsAny(c, " \t") {
				return c, fe.Message
			}
		}
	}
	if fe.Type != "" {
		return fe.Type, fe.Message
	}
	return "function_error", fe.Message
}

func renderRedrive(w io.Writer, s redriveSummary) {
	verb := "redriving"
	if s.DryRun {
		verb = "dry run, nothing invoked or deleted:"
	}
	fmt.Fprintf(w, "%s %s → %s\n", verb, s.Queue, s.Function)
	tw := table(w)
	for _, it := range s.Messages {
		kept := "deleted"
		if !it.Deleted {
			kept = "kept"
		}
		detail := ""
		if it.Code != "" {
			detail = it.Code + ": " + clip(it.Reason, 100)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", it.MessageID, orDash(it.EventID), it.Outcome, kept, orDash(it.Shape), detail)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "%d messages: %d deleted, %d left", len(s.Messages), s.Deleted, s.Left)
	for _, k := range slices.Sorted(maps.Keys(s.Counts)) {
		fmt.Fprintf(w, "; %s %d", k, s.Counts[k])
	}
	if s.LimitReached {
		fmt.Fprint(w, " (stopped at --limit: more may be waiting)")
	}
	fmt.Fprintln(w)
}
