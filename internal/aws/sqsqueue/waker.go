package sqsqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/siteswarm/eventplatform/internal/jobs"
)

// Waker sends job wakes to the jobs queue.
type Waker struct {
	Client *sqs.Client
	URL    string
}

var _ jobs.Waker = (*Waker)(nil)

// Wake sends w, delivered after delay (SQS DelaySeconds, at most 900 s).
func (q *Waker) Wake(ctx context.Context, w jobs.Wake, delay time.Duration) error {
	body, err := json.Marshal(w)
	if err != nil {
		return err
	}
	secs := int32(min(max(delay, 0), jobs.MaxWakeDelay).Seconds())
	in := &sqs.SendMessageInput{
		QueueUrl: aws.String(q.URL), MessageBody: aws.String(string(body)), DelaySeconds: secs,
		// The jobs queue is a fair queue by tenant: one tenant's thousand
		// exports do not hold up another's erasure.
		MessageGroupId: aws.String(TenantGroup(w.TenantID)),
	}
	if _, err := q.Client.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("sqs send wake: %w", err)
	}
	return nil
}
