package devstack

import (
	"context"
	"fmt"
	"strings"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/archiveconsumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/healthfn"
	"github.com/siteswarm/eventplatform/internal/wire/httpconsumerfn"
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
// says otherwise: base64 of "evp-local-dev-subscriber-signing-key", a
// clearly-local value that can never be mistaken for a real secret.
const DefaultSubscriberSecret = "whsec_ZXZwLWxvY2FsLWRldi1zdWJzY3JpYmVyLXNpZ25pbmcta2V5"

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
	if v := s.Settings.List(SettingSubscriberSecretPrefix + TopicKey(topic)); len(v) > 0 {
		return v
	}
	if v := s.Settings.List(httpconsumerfn.EnvSecret); len(v) > 0 {
		return v
	}
	return []string{DefaultSubscriberSecret}
}

// ConsumerResources are a topic consumer's settings the local stack
// decides: its queue and tables, and for an HTTP topic its delivery target
// and signing secrets (per topic, see SubscriberURL and
// SubscriberSecrets). Tunables are read from the stack's settings under
// the names the Lambda reads.
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
		consumerfn.EnvHealthFunction: healthfn.Name,
	}
	if tp.Consumer == topology.ConsumerHTTP {
		res[httpconsumerfn.EnvSubscriberURL] = s.SubscriberURL(tp.Name)
		res[httpconsumerfn.EnvSecret] = strings.Join(s.SubscriberSecrets(tp.Name), ",")
	}
	return res
}

// consumerFunctions registers one consumer per HTTP and archive topic,
// each fed by an SQS event source shaped by the topology (batch size,
// window, max concurrency). Purge topics get theirs in fn_purge.go.
func consumerFunctions(ctx context.Context, s *Stack) ([]Function, error) {
	var fns []Function
	cl := s.consumerClients()
	for _, tp := range s.Topology.Topics {
		env := s.env(s.ConsumerResources(tp))
		if err := s.Settings.Err(); err != nil {
			return nil, err
		}
		name := consumerfn.FunctionName(tp)
		rt := s.runtime(name)
		var (
			c   *consume.Consumer
			err error
		)
		switch tp.Consumer {
		case topology.ConsumerHTTP:
			var cfg httpconsumerfn.Config
			if cfg, err = httpconsumerfn.Load(env, s.Topology); err == nil {
				c, err = httpconsumerfn.New(ctx, cfg, httpconsumerfn.Clients{Clients: cl}, rt)
			}
		case topology.ConsumerArchive:
			var cfg archiveconsumerfn.Config
			if cfg, err = archiveconsumerfn.Load(env, s.Topology); err == nil {
				c, err = archiveconsumerfn.New(cfg, cl, rt)
			}
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		q := s.Resources.Queues[tp.Name]
		fns = append(fns, Function{
			Name:     name,
			Handler:  c.Handle,
			Timeout:  tp.ConsumerTimeout,
			Triggers: []lambdalocal.Trigger{queueSource(tp, q.URL, q.ARN)},
		})
	}
	return fns, nil
}

// consumerClients are a consumer's clients: the data path's, and the
// stack's Lambda client for breaker notices to the subscriber-health
// function.
func (s *Stack) consumerClients() consumerfn.Clients {
	return consumerfn.Clients{Clients: s.Clients.Data(), Lambda: s.Clients.Lambda}
}

// queueSource is a topic consumer's SQS event source, shaped by the
// topology (batch size, window, max concurrency) as the CDK app shapes it.
func queueSource(tp topology.Topic, url, arn string) lambdalocal.QueueSource {
	return lambdalocal.QueueSource{QueueURL: url, QueueARN: arn, BatchSize: tp.BatchSize, BatchWindow: tp.BatchWindow, MaxConcurrency: tp.MaxConcurrency}
}
