package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/siteswarm/eventplatform/internal/outbox"
)

var _ outbox.BatchSender = (*Sender)(nil)

// SQS's SendMessageBatch limits: 10 entries, and the sum of the bodies and
// attributes 256 KiB (kept under, with room for the attributes).
const (
	batchEntries = 10
	batchBytes   = 200 << 10
	// entryOverhead is a generous allowance for an entry's attributes.
	entryOverhead = 1 << 10
)

// SendBatch sends ms with SendMessageBatch, up to 10 messages (and
// batchBytes) a request: each topic's messages in their order, one request
// after another (a FIFO group's sequence is the order of its entries and
// requests), the topics in parallel. A message refused by SQS (its entry
// failed, or its request did) gets its error, and so do the rest of its
// topic's messages, unsent: sending them would put them ahead of it.
func (s *Sender) SendBatch(ctx context.Context, ms []outbox.Message) []error {
	errs := make([]error, len(ms))
	byTopic := map[string][]int{}
	var topics []string
	for i, m := range ms {
		if _, ok := byTopic[m.Topic]; !ok {
			topics = append(topics, m.Topic)
		}
		byTopic[m.Topic] = append(byTopic[m.Topic], i)
	}
	var wg sync.WaitGroup
	for _, topic := range topics {
		wg.Go(func() { s.sendTopic(ctx, topic, ms, byTopic[topic], errs) })
	}
	wg.Wait()
	return errs
}

func (s *Sender) sendTopic(ctx context.Context, topic string, ms []outbox.Message, idx []int, errs []error) {
	url, ok := s.URLs[topic]
	if !ok {
		for _, i := range idx {
			errs[i] = fmt.Errorf("sqsqueue: no queue configured for topic %q", topic)
		}
		return
	}
	var failed error
	for start := 0; start < len(idx); {
		if failed != nil {
			for _, i := range idx[start:] {
				errs[i] = fmt.Errorf("sqs send %s: not sent after an earlier message of the batch failed: %w", topic, failed)
			}
			return
		}
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(url)}
		size, end := 0, start
		for end < len(idx) && len(in.Entries) < batchEntries {
			e := s.entry(ms[idx[end]], strconv.Itoa(end-start))
			n := len(aws.ToString(e.MessageBody)) + entryOverhead
			if len(in.Entries) > 0 && size+n > batchBytes {
				break
			}
			in.Entries, size, end = append(in.Entries, e), size+n, end+1
		}
		out, err := s.Client.SendMessageBatch(ctx, in)
		if err != nil {
			failed = fmt.Errorf("sqs send batch %s: %w", topic, err)
			for _, i := range idx[start:end] {
				errs[i] = failed
			}
			start = end
			continue
		}
		refused := map[string]error{}
		for _, f := range out.Failed {
			refused[aws.ToString(f.Id)] = fmt.Errorf("sqs send %s: %s: %s", topic, aws.ToString(f.Code), aws.ToString(f.Message))
		}
		for k := start; k < end; k++ {
			if err, ok := refused[strconv.Itoa(k-start)]; ok {
				errs[idx[k]] = err
				if failed == nil {
					failed = err
				}
			}
		}
		if len(out.Successful)+len(out.Failed) != end-start {
			// An answer that does not account for every entry: the ones it
			// does not name are unknown, so they count as not sent (a
			// resend is at worst a duplicate the consumer drops).
			named := map[string]bool{}
			for _, e := range out.Successful {
				named[aws.ToString(e.Id)] = true
			}
			for k := start; k < end; k++ {
				id := strconv.Itoa(k - start)
				if !named[id] && refused[id] == nil {
					errs[idx[k]] = errors.New("sqs send batch: the answer does not name this message")
				}
			}
		}
		start = end
	}
}
