package sqsqueue_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

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
				ctx := context.Background()
				url := env.Queue(topic).URL
				var out []outboxtest.Delivered
				for {
					// Receive and delete: a FIFO group is locked while a
					// message of it is in flight.
					res, err := env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 1, MaxNumberOfMessages: 10,
						MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
					require.NoError(t, err)
					if len(res.Messages) == 0 {
						return out
					}
					for _, m := range res.Messages {
						d := outboxtest.Delivered{Body: []byte(aws.ToString(m.Body)), Attributes: map[string]string{}, GroupID: m.Attributes["MessageGroupId"]}
						for k, v := range m.MessageAttributes {
							d.Attributes[k] = aws.ToString(v.StringValue)
						}
						out = append(out, d)
						_, err := env.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
						require.NoError(t, err)
					}
				}
			},
		}
	})
}
