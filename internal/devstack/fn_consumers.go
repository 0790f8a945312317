package devstack

import (
	"context"
	"fmt"
	"strings"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/metric"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
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
	SettingSubscriberURLPrefix = wire.EnvSubscriberURL + "_"
	// SettingSubscriberSecretPrefix + TopicKey(topic) (e.g.
	// SUBSCRIBER_SECRET_BILLING_EVENTS) sets one topic's signing secrets
	// (comma-separated whsec_…); SUBSCRIBER_SECRET sets every topic's.
	SettingSubscriberSecretPrefix = wire.EnvSubscriberSecret + "_"
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
	if v := s.Settings.List(wire.EnvSubscriberSecret); len(v) > 0 {
		return v
	}
	return []string{DefaultSubscriberSecret}
}

// ConsumerSettings are a topic consumer's settings: resources from the
// stack, delivery target and secret from the stack's settings, tunables
// overridable from the environment exactly as on Lambda.
func (s *Stack) ConsumerSettings(tp topology.Topic) map[string]string {
	q := s.Resources.Queues[tp.Name]
	settings := map[string]string{
		wire.EnvConsumerTopic:    tp.Name,
		wire.EnvConsumerQueueURL: q.URL,
		wire.EnvConsumerDLQURL:   q.DLQURL,
		wire.EnvEventsTable:      s.Resources.EventsTable,
		wire.EnvIncidentsTable:   s.Resources.IncidentsTable,
		wire.EnvBucket:           s.Resources.Bucket,
	}
	if tp.Consumer == topology.ConsumerHTTP {
		settings[wire.EnvSubscriberURL] = s.SubscriberURL(tp.Name)
		settings[wire.EnvSubscriberSecret] = strings.Join(s.SubscriberSecrets(tp.Name), ",")
	}
	for _, k := range []string{
		wire.EnvConsumerBackoffBase, wire.EnvConsumerBackoffCap, wire.EnvConsumerConcurrency, wire.EnvRetention,
		wire.EnvSubscriberTimeout, wire.EnvSubscriberSecretRefresh, wire.EnvArchivePrefix,
	} {
		if v := s.Settings.String(k, ""); v != "" {
			settings[k] = v
		}
	}
	return settings
}

// consumerFunctions registers one consumer per HTTP and archive topic,
// each fed by an SQS event source shaped by the topology (batch size,
// window, max concurrency). Purge topics get theirs from the cache purge
// service.
func consumerFunctions(ctx context.Context, s *Stack) ([]Function, error) {
	var fns []Function
	for _, tp := range s.Topology.Topics {
		settings := s.ConsumerSettings(tp)
		if err := s.Settings.Err(); err != nil {
			return nil, err
		}
		name := wire.ConsumerFunctionName(tp)
		log := s.Log.With("function", name)
		var (
			c   *consume.Consumer
			err error
		)
		switch tp.Consumer {
		case topology.ConsumerHTTP:
			var cfg wire.HTTPConsumerConfig
			if cfg, err = wire.LoadHTTPConsumerConfig(envconf.FromMap(settings), s.Topology); err == nil {
				c, err = wire.NewHTTPConsumer(ctx, cfg, s.Topology, s.Clients, log)
			}
		case topology.ConsumerArchive:
			var cfg wire.ArchiveConsumerConfig
			if cfg, err = wire.LoadArchiveConsumerConfig(envconf.FromMap(settings), s.Topology); err == nil {
				c, err = wire.NewArchiveConsumer(cfg, s.Topology, s.Clients, log)
			}
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		// EMF lines go to the stack's debug log: nobody ingests them
		// locally.
		c.Metrics = &metric.Emitter{W: logWriter{s}}
		q := s.Resources.Queues[tp.Name]
		fns = append(fns, Function{
			Name:    name,
			Handler: c.Handle,
			Timeout: tp.ConsumerTimeout,
			Triggers: []lambdalocal.Trigger{lambdalocal.QueueSource{
				QueueURL: q.URL, QueueARN: q.ARN,
				BatchSize: tp.BatchSize, BatchWindow: tp.BatchWindow, MaxConcurrency: tp.MaxConcurrency,
			}},
		})
	}
	return fns, nil
}
