package lambdainvoke

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
)

// NotifyTimeout bounds one notice: an asynchronous invoke is accepted in
// milliseconds, and a consumer must not wait on it for long (the monitor's
// schedule applies the state anyway).
const NotifyTimeout = 2 * time.Second

// Notifier tells the subscriber-health function that a topic's breaker
// changed (health.Notifier): an asynchronous (Event) invoke with a
// health.Notice, so the function applies the state to the topic's event
// source mapping at once instead of at its next scheduled run.
type Notifier struct {
	Client *lambda.Client
	// Function is the subscriber-health function's ARN (or name).
	Function string
}

var _ subscriberhealth.Notifier = (*Notifier)(nil)

// Changed invokes the function with {"topic": topic} (InvocationType
// Event: Lambda queues it and retries it on failure).
func (n *Notifier) Changed(ctx context.Context, topic string) error {
	payload, err := json.Marshal(subscriberhealth.Notice{Topic: topic})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, NotifyTimeout)
	defer cancel()
	if _, err := n.Client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(n.Function),
		InvocationType: lambdatypes.InvocationTypeEvent,
		Payload:        payload,
	}); err != nil {
		return fmt.Errorf("notify %s of %s: %w", n.Function, topic, err)
	}
	return nil
}
