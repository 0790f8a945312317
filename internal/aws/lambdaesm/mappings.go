package lambdaesm

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
)

// Source names a topic's mapping: its consumer function and its queue.
type Source struct {
	// Function is the consumer's name or ARN.
	Function string
	// QueueARN is the topic queue's ARN.
	QueueARN string
}

// Mappings reads and sets the topics' event source mappings. A topic's
// mapping is found once (ListEventSourceMappings filtered by its function
// and queue) and then addressed by its UUID.
type Mappings struct {
	Client  *lambda.Client
	Sources map[string]Source

	mu  sync.Mutex
	ids map[string]string
}

var _ subscriberhealth.Mappings = (*Mappings)(nil)

// Mapping reads the topic's mapping. A mapping in a transition (Creating,
// Updating, Deleting) is health.ErrMappingBusy.
func (m *Mappings) Mapping(ctx context.Context, topic string) (subscriberhealth.Mapping, error) {
	for attempt := 0; ; attempt++ {
		id, err := m.id(ctx, topic)
		if err != nil {
			return subscriberhealth.Mapping{}, err
		}
		out, err := m.Client.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: aws.String(id)})
		var nf *lambdatypes.ResourceNotFoundException
		if errors.As(err, &nf) && attempt == 0 {
			m.forget(topic) // replaced by a deploy: find it again
			continue
		}
		if err != nil {
			return subscriberhealth.Mapping{}, fmt.Errorf("lambda: read the %s event source mapping: %w", topic, err)
		}
		return fromConfig(topic, aws.ToString(out.State), out.ScalingConfig)
	}
}

func fromConfig(topic, state string, sc *lambdatypes.ScalingConfig) (subscriberhealth.Mapping, error) {
	var hm subscriberhealth.Mapping
	switch state {
	case "Enabled", "Enabling":
		hm.Enabled = true
	case "Disabled", "Disabling":
	default:
		return hm, fmt.Errorf("%w: %s is %s", subscriberhealth.ErrMappingBusy, topic, state)
	}
	if sc != nil && sc.MaximumConcurrency != nil {
		hm.MaxConcurrency = int(*sc.MaximumConcurrency)
	}
	return hm, nil
}

// Set enables or disables the topic's mapping; enabling also sets its
// maximum concurrency (a disabled mapping's is left as it was).
func (m *Mappings) Set(ctx context.Context, topic string, hm subscriberhealth.Mapping) error {
	id, err := m.id(ctx, topic)
	if err != nil {
		return err
	}
	in := &lambda.UpdateEventSourceMappingInput{UUID: aws.String(id), Enabled: aws.Bool(hm.Enabled)}
	if hm.Enabled && hm.MaxConcurrency > 0 {
		in.ScalingConfig = &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(int32(hm.MaxConcurrency))}
	}
	_, err = m.Client.UpdateEventSourceMapping(ctx, in)
	var inUse *lambdatypes.ResourceInUseException
	if errors.As(err, &inUse) {
		return fmt.Errorf("%w: %s: %v", subscriberhealth.ErrMappingBusy, topic, err)
	}
	var nf *lambdatypes.ResourceNotFoundException
	if errors.As(err, &nf) {
		m.forget(topic)
	}
	if err != nil {
		return fmt.Errorf("lambda: set the %s event source mapping: %w", topic, err)
	}
	return nil
}

// id is the UUID of the mapping from the topic's queue to its consumer.
func (m *Mappings) id(ctx context.Context, topic string) (string, error) {
	m.mu.Lock()
	id, ok := m.ids[topic]
	m.mu.Unlock()
	if ok {
		return id, nil
	}
	src, ok := m.Sources[topic]
	if !ok {
		return "", fmt.Errorf("%w: %s has no consumer mapping", subscriberhealth.ErrUnknownTopic, topic)
	}
	var found []string
	p := lambda.NewListEventSourceMappingsPaginator(m.Client, &lambda.ListEventSourceMappingsInput{
		FunctionName: aws.String(src.Function), EventSourceArn: aws.String(src.QueueARN),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return "", fmt.Errorf("lambda: find the %s event source mapping: %w", topic, err)
		}
		for _, c := range page.EventSourceMappings {
			if aws.ToString(c.EventSourceArn) == src.QueueARN {
				found = append(found, aws.ToString(c.UUID))
			}
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("lambda: %d event source mappings from %s to %s, want exactly one", len(found), src.QueueARN, src.Function)
	}
	m.mu.Lock()
	if m.ids == nil {
		m.ids = map[string]string{}
	}
	m.ids[topic] = found[0]
	m.mu.Unlock()
	return found[0], nil
}

func (m *Mappings) forget(topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ids, topic)
}
