package sqsqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/outbox/outboxtest"
	"github.com/siteswarm/eventplatform/internal/topology"
)

func TestSenderContract(t *testing.T) {
	t.Parallel()
	outboxtest.Exercise(t, func(t *testing.T) outboxtest.Harness {
		top := fifoTopology() // billing.events is FIFO
		env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(top))
		return outboxtest.Harness{
			Sender:   &sqsqueue.Sender{Client: env.SQS, URLs: env.Resources.QueueURLs(), FIFO: top.FIFOTopics()},
			Standard: topology.CRM,
			FIFO:     topology.Billing,
			Receive: func(t *testing.T, topic string) []outboxtest.Delivered {
				// Received and deleted (a FIFO group is locked while a
				// message of it is in flight) through the kit's receive, so
				// a lost receive response waits for its messages instead of
				// ending the drain early.
				var out []outboxtest.Delivered
				for _, m := range env.ReceiveAndDelete(context.Background(), env.Queue(topic).URL, 0, time.Second) {
					d := outboxtest.Delivered{Body: []byte(aws.ToString(m.Body)), Attributes: map[string]string{}, GroupID: m.Attributes["MessageGroupId"]}
					for k, v := range m.MessageAttributes {
						d.Attributes[k] = aws.ToString(v.StringValue)
					}
					out = append(out, d)
				}
				return out
			},
		}
	})
}
