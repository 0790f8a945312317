package sqsqueue

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
)

// Stats reads the approximate depth of every topic queue and its DLQ: one
// GetQueueAttributes per queue, in parallel.
type Stats struct {
	Client *sqs.Client
	// URLs and DLQURLs map topic name to queue URL.
	URLs    map[string]string
	DLQURLs map[string]string
}

var _ admin.QueueStats = (*Stats)(nil)

// Depths returns one entry per topic, sorted by topic.
func (s *Stats) Depths(ctx context.Context) ([]admin.QueueDepth, error) {
	topics := slices.Sorted(maps.Keys(s.URLs))
	out := make([]admin.QueueDepth, len(topics))
	errs := make([]error, len(topics))
	var wg sync.WaitGroup
	for i, topic := range topics {
		out[i].Topic = topic
		wg.Go(func() {
			attrs, err := s.attributes(ctx, s.URLs[topic])
			if err != nil {
				errs[i] = err
				return
			}
			out[i].Visible = count(attrs, sqstypes.QueueAttributeNameApproximateNumberOfMessages)
			out[i].InFlight = count(attrs, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
			out[i].Delayed = count(attrs, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)
			if dlq := s.DLQURLs[topic]; dlq != "" {
				dattrs, err := s.attributes(ctx, dlq)
				if err != nil {
					errs[i] = err
					return
				}
				out[i].DeadLetters = count(dattrs, sqstypes.QueueAttributeNameApproximateNumberOfMessages) +
					count(dattrs, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Stats) attributes(ctx context.Context, url string) (map[string]string, error) {
	res, err := s.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("sqs attributes of %s: %w", url, err)
	}
	return res.Attributes, nil
}

func count(attrs map[string]string, name sqstypes.QueueAttributeName) int {
	n, _ := strconv.Atoi(attrs[string(name)])
	return n
}

var _ subscriberhealth.Backlogs = (*Stats)(nil)

// Backlog is how many messages a topic's queue holds: visible, in flight
// and delayed (one GetQueueAttributes).
func (s *Stats) Backlog(ctx context.Context, topic string) (int, error) {
	url, ok := s.URLs[topic]
	if !ok {
		return 0, fmt.Errorf("sqs: no queue for topic %s", topic)
	}
	attrs, err := s.attributes(ctx, url)
	if err != nil {
		return 0, err
	}
	return count(attrs, sqstypes.QueueAttributeNameApproximateNumberOfMessages) +
		count(attrs, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible) +
		count(attrs, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed), nil
}
