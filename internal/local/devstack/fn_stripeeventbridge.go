package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/siteswarm/eventplatform/internal/devapi"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/stripeeventbridgefn"
)

// LocalStripeEventSource is the local stack's Stripe partner event source:
// the source of the EventBridge events it hands stripe-eventbridge
// (`evp stripe send --via eventbridge`), as a stage's rule would.
const LocalStripeEventSource = devapi.StripeEventSource

// SQSPath serves the SQS API of the stack's queues (devapi.SQSPath).
const SQSPath = devapi.SQSPath

// stripe-eventbridge reads Stripe's tenant map, as webhook-stripe does
// (the same variables, the same local SSM parameters), so an event that
// arrives both ways resolves to the same tenant. Locally nothing but the
// Lambda Invoke API triggers it: the stack has no partner event bus. It
// has the stage's DLQ (<prefix>-stripe-eventbridge-dlq), which
// DeadLetterStripeEvent fills as the rule and the asynchronous invocation
// do on a stage, and `evp stripe redrive-eventbridge` drains through
// SQSPath.
func init() {
	locals[stripeeventbridgefn.Name] = local{env: func(ctx context.Context, s *Stack) (map[string]string, error) { return s.stripeTenants(ctx) }}
	register("stripe-eventbridge-dlq", func(ctx context.Context, s *Stack) ([]Function, error) {
		if _, err := s.provisioning.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{
			QueueName: aws.String(stripeeventbridgefn.DLQName(s.Resources.Prefix)),
			Attributes: map[string]string{
				string(sqstypes.QueueAttributeNameMessageRetentionPeriod): fmt.Sprint(int(awslocal.DLQRetention / time.Second)),
			},
		}); err != nil {
			return nil, fmt.Errorf("create %s: %w", stripeeventbridgefn.DLQName(s.Resources.Prefix), err)
		}
		return nil, errors.Join(s.handle(SQSPath, http.HandlerFunc(s.serveSQS)), s.handle(SQSPath+"/", http.HandlerFunc(s.serveSQS)))
	})
}

// StripeEventBridgeDLQ is the URL of the stack's stripe-eventbridge DLQ.
func (s *Stack) StripeEventBridgeDLQ(ctx context.Context) (string, error) {
	out, err := s.Clients.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(stripeeventbridgefn.DLQName(s.Resources.Prefix))})
	if err != nil {
		return "", fmt.Errorf("devstack: the stripe-eventbridge DLQ: %w", err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// DeadLetterStripeEvent puts a Stripe event in the stack's
// stripe-eventbridge DLQ as a stage's senders do: the rule's copy
// (stripe.ShapeRule: the EventBridge event, with the attributes
// EventBridge adds) or the asynchronous invocation's failure record
// (stripe.ShapeFailureRecord), with errorMessage as the function's last
// error. It returns the message id.
func (s *Stack) DeadLetterStripeEvent(ctx context.Context, ev events.EventBridgeEvent, shape stripe.DeadLetterShape, errorMessage string) (string, error) {
	dlq, err := s.StripeEventBridgeDLQ(ctx)
	if err != nil {
		return "", err
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(dlq)}
	fn := awslocal.FunctionARN(stripeeventbridgefn.Name)
	switch shape {
	case stripe.ShapeRule:
		body, err := json.Marshal(ev)
		if err != nil {
			return "", err
		}
		in.MessageBody = aws.String(string(body))
		attr := func(v string) sqstypes.MessageAttributeValue {
			return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
		in.MessageAttributes = map[string]sqstypes.MessageAttributeValue{
			"ERROR_CODE": attr("SDK_CLIENT_ERROR"), "ERROR_MESSAGE": attr(errorMessage),
			"RULE_ARN":   attr("arn:aws:events:" + devapi.Region + ":" + devapi.AccountID + ":rule/local-stripe-eventbridge"),
			"TARGET_ARN": attr(fn),
		}
	case stripe.ShapeFailureRecord:
		body, err := stripe.FailureRecord(ev, fn, "Error", errorMessage, 3, time.Now())
		if err != nil {
			return "", err
		}
		in.MessageBody = aws.String(string(body))
	default:
		return "", fmt.Errorf("devstack: no dead-letter shape %q", shape)
	}
	out, err := s.Clients.SQS.SendMessage(ctx, in)
	if err != nil {
		return "", fmt.Errorf("devstack: dead-letter %s: %w", ev.ID, err)
	}
	return aws.ToString(out.MessageId), nil
}

// serveSQS forwards the SQS API under SQSPath to the SQS emulator, the
// prefix stripped, so a client that knows only the stack's URL (evp)
// reaches its queues. Behind real endpoints (TargetAWS) the queues are
// there.
func (s *Stack) serveSQS(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
		return
	}
	if s.Emulators == nil {
		writeJSON(w, http.StatusNotImplemented, map[string]string{"error": "this stack uses real AWS endpoints: reach its queues with the SQS API there"})
		return
	}
	target, err := url.Parse(s.Emulators.SQSEndpoint)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		p := strings.TrimPrefix(pr.In.URL.Path, SQSPath)
		if p == "" {
			p = "/"
		}
		pr.Out.URL.Path, pr.Out.URL.RawPath = p, ""
		pr.Out.Host = target.Host
	}}
	proxy.ServeHTTP(w, r)
}
