package devstack

import (
	"context"
	"fmt"
	"strings"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/consumerkinds"
	"github.com/siteswarm/eventplatform/internal/wire/httpconsumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/subscriberhealthfn"
)

func init() { register("consumers", consumerFunctions) }

// Consumer settings of the local stack (docs/consumers.md).
const (
	// SettingSubscriberURLs is a JSON object topic → subscriber URL for the
	// HTTP topics, e.g. {"billing.events":"https://hooks.example.com/x"}.
	SettingSubscriberURLs = "SUBSCRIBER_URLS"
	// SettingSubscriberURLPrefix + TopicKey(topic) (e.g.
	// SUBSCRIBER_URL_BILLING_EVENTS) sets one topic's subscriber URL; it
	// wins over SUBSCRIBER_URLS. Unset topics deliver to the stack's sink,
	// <stack URL>/__deliveries/<topic>.
	SettingSubscriberURLPrefix = httpconsumerfn.EnvSubscriberURL + "_"
	// SettingSubscriberSecretPrefix + TopicKey(topic) (e.g.
	// SUBSCRIBER_SECRET_BILLING_EVENTS) sets one topic's signing secrets
	// (comma-separated whsec_…); SUBSCRIBER_SECRET sets every topic's.
	SettingSubscriberSecretPrefix = httpconsumerfn.EnvSecret + "_"
)

// DefaultSubscriberSecret signs local deliveries unless SUBSCRIBER_SECRET
// says otherwise (httpconsumerfn.LocalSecret).
const DefaultSubscriberSecret = httpconsumerfn.LocalSecret

// TopicKey is a topic's suffix in per-topic setting names: upper case,
// dots and hyphens as underscores ("billing.events" → "BILLING_EVENTS").
func TopicKey(topic string) string {
	return strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(topic))
}

// SubscriberURL is where an HTTP topic delivers locally.
func (s *Stack) SubscriberURL(topic string) string {
	if v := s.Settings.String(SettingSubscriberURLPrefix+TopicKey(topic), ""); v != "" {
		return v
	}
	var urls map[string]string
	s.Settings.JSON(SettingSubscriberURLs, &urls)
	if v := urls[topic]; v != "" {
		return v
	}
	return s.URL() + SinkPath + "/" + topic
}

// SubscriberSecrets are the signing secrets of an HTTP topic's local
// deliveries, newest first.
func (s *Stack) SubscriberSecrets(topic string) []string {
	return s.topicSecret(*httpconsumerfn.Kind.Secret, topic)
}

// topicSecret is a kind's per-topic secret locally: <Env>_<TOPIC>, else
// <Env>, else the kind's local value.
func (s *Stack) topicSecret(sec consumerfn.Secret, topic string) []string {
	if v := s.Settings.List(sec.Env + "_" + TopicKey(topic)); len(v) > 0 {
		return v
	}
	if v := s.Settings.List(sec.Env); len(v) > 0 {
		return v
	}
	return []string{sec.LocalValue}
}

// ConsumerResources are a topic consumer's settings the local stack
// decides: its queue and tables, and what its kind's descriptor asks for
// (an HTTP topic's delivery target and signing secrets, per topic, see
// SubscriberURL and SubscriberSecrets). Tunables are read from the stack's
// settings under the names the Lambda reads.
func (s *Stack) ConsumerResources(tp topology.Topic) map[string]string {
	q := s.Resources.Queues[tp.Name]
	res := map[string]string{
		consumerfn.EnvTopic:    tp.Name,
		consumerfn.EnvQueueURL: q.URL,
		consumerfn.EnvDLQURL:   q.DLQURL,
		wire.EnvEventsTable:    s.Resources.EventsTable,
		wire.EnvIncidentsTable: s.Resources.IncidentsTable,
		wire.EnvBucket:         s.Resources.Bucket,
		// breaker transitions are applied at once
		consumerfn.EnvHealthFunction: subscriberhealthfn.Name,
	}
	k, _ := consumerkinds.Of(tp.Consumer)
	if k.Subscriber != "" {
		res[k.Subscriber] = s.SubscriberURL(tp.Name)
	}
	if k.Secret != nil {
		res[k.Secret.Env] = strings.Join(s.topicSecret(*k.Secret, tp.Name), ",")
	}
	if k.Objects != nil {
		res[k.Objects.EnvBucket] = s.Resources.Bucket
	}
	return res
}

// consumerFunctions registers one consumer per topic of every kind with
// local wiring (consumerfn.Kind.Local), from its descriptor
// (consumerfn.Function): its SQS event source shaped by the topology
// (batch size, window, max concurrency) as the CDK app shapes it. Purge
// topics get theirs in fn_cachepurge.go.
func consumerFunctions(ctx context.Context, s *Stack) ([]Function, error) {
	var fns []Function
	for _, tp := range s.Topology.Topics {
		k, ok := consumerkinds.Of(tp.Consumer)
		if !ok || k.Local == nil {
			continue
		}
		env := s.env(s.ConsumerResources(tp))
		if err := s.Settings.Err(); err != nil {
			return nil, err
		}
		fn := consumerfn.Function(tp, k)
		conf, err := fn.Wiring.Load(env, s.Topology)
		if err != nil {
			return nil, fmt.Errorf("%s config: %w", fn.Local(), err)
		}
		h, err := fn.Wiring.Build(coldStart(ctx, fn.Local()), conf, s.clientSource(), s.runtime(fn.Local()))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn.Local(), err)
		}
		triggers, err := s.triggersOf(fn)
		if err != nil {
			return nil, err
		}
		fns = append(fns, Function{Name: fn.Local(), Handler: h, Timeout: fn.Timeout, Triggers: triggers})
	}
	return fns, nil
}

// consumerClients are a consumer's clients: the data path's, and the
// stack's Lambda client for breaker notices to the subscriber-health
// function.
func (s *Stack) consumerClients() consumerfn.Clients {
	return consumerfn.Clients{Clients: s.Clients.Data(), Lambda: s.Clients.Lambda}
}
