package platform

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/httpconsumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/purgeconsumerfn"
)

// Every topic of the topology has its queue and DLQ with the topology's
// names and settings; billing.events is FIFO.
func TestQueuePerTopic(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		require.True(t, s.p.Queues["billing.events"].Topic.FIFO, "billing keeps each customer's events in order")
		queues := s.tpl.ofType("AWS::SQS::Queue")
		stripeDLQ := 0
		if s.p.StripeEventBridge != nil {
			stripeDLQ = 1
			require.Contains(t, queues, s.idOf(s.p.StripeEventBridge.DLQ))
		}
		require.Len(t, queues, 2*len(s.p.Topology.Topics)+4+stripeDLQ, "one queue and one DLQ per topic, the jobs queue and the imports queue and their DLQs (and Stripe's EventBridge DLQ where the stage has that path)")
		for _, q := range []string{s.idOf(s.p.Imports.Queue), s.idOf(s.p.Imports.DLQ)} {
			require.Contains(t, queues, q)
		}
		for _, tp := range s.p.Topology.Topics {
			q := s.tpl.Resources[s.idOf(s.p.Queues[tp.Name].Queue)].Properties
			dlqID := s.idOf(s.p.Queues[tp.Name].DLQ)
			dlq := s.tpl.Resources[dlqID].Properties
			require.Equal(t, tp.QueueName(s.p.Stage.Prefix()), q["QueueName"])
			require.Equal(t, tp.DLQName(s.p.Stage.Prefix()), dlq["QueueName"])
			require.Equal(t, tp.VisibilityTimeout.Seconds(), num(t, q["VisibilityTimeout"]), tp.Name)
			require.Equal(t, float64(tp.RedriveMaxReceiveCount()), num(t, dig(q, "RedrivePolicy", "maxReceiveCount")), tp.Name)
			require.Equal(t, dlqID, refID(dig(q, "RedrivePolicy", "deadLetterTargetArn")), tp.Name)
			if tp.FIFO {
				// High-throughput FIFO (limits per message group, the
				// tenant's entity) with explicit deduplication ids, on the
				// queue and its DLQ alike.
				for _, props := range []map[string]any{q, dlq} {
					require.Equal(t, true, props["FifoQueue"], tp.Name)
					require.Equal(t, false, props["ContentBasedDeduplication"], tp.Name)
					require.Equal(t, "messageGroup", props["DeduplicationScope"], tp.Name)
					require.Equal(t, "perMessageGroupId", props["FifoThroughputLimit"], tp.Name)
				}
			} else {
				for _, props := range []map[string]any{q, dlq} {
					for _, k := range []string{"FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"} {
						require.Nil(t, props[k], "%s: a standard queue (a fair queue by tenant) sets no %s", tp.Name, k)
					}
				}
			}
		}
	})
}

// Every topic with its consumer's settings (an HTTP subscriber, purge
// zones) has one consumer function with one event source matching the
// topology; the others are listed as unconsumed.
func TestConsumerPerTopic(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		mappings := s.tpl.ofType("AWS::Lambda::EventSourceMapping")
		for _, tp := range s.p.Topology.Topics {
			consumed := (tp.Consumer != topology.ConsumerPurge || s.p.Stage.HasPurgeZones()) &&
				(tp.Consumer != topology.ConsumerHTTP || s.p.Stage.Subscribers[tp.Name] != "")
			if !consumed {
				require.Contains(t, s.p.Unconsumed, tp.Name)
				require.NotContains(t, s.p.Consumers, tp.Name)
				continue
			}
			fnID, fn := s.function(t, "consumer-"+slug(tp.Name))
			require.Equal(t, tp.ConsumerTimeout.Seconds(), num(t, fn.Properties["Timeout"]), tp.Name)
			env := dig(fn.Properties, "Environment", "Variables").(map[string]any)
			require.Equal(t, tp.Name, env[consumerfn.EnvTopic])
			require.Equal(t, s.idOf(s.p.Queues[tp.Name].Queue), refID(env[consumerfn.EnvQueueURL]))
			require.Equal(t, s.idOf(s.p.Queues[tp.Name].DLQ), refID(env[consumerfn.EnvDLQURL]))
			require.Equal(t, s.idOf(s.p.Tables[table.Events.Name]), refID(env[wire.EnvEventsTable]))
			require.Equal(t, s.idOf(s.p.Tables[table.Incidents.Name]), refID(env[wire.EnvIncidentsTable]))
			if tp.Consumer == topology.ConsumerPurge {
				require.Equal(t, s.idOf(s.p.Tables[table.Purge.Name]), refID(env[wire.EnvPurgeTable]))
				require.Equal(t, s.idOf(s.p.Secrets.CloudflareToken), refID(env[purgeconsumerfn.EnvTokenSecretARN]))
				var zones cachepurge.Zones
				require.NoError(t, json.Unmarshal([]byte(env[purgeconsumerfn.EnvZones].(string)), &zones))
				require.Equal(t, s.p.Stage.PurgeDefaultZone, zones.Default)
				require.Empty(t, zones.ByTenant, "per-tenant zones are kept in SSM (TestStageMapsLiveInSSM)")
				require.Equal(t, len(s.p.Stage.PurgeZones) > 0, env[purgeconsumerfn.EnvZonesPath] != nil)
			}
			if tp.Consumer == topology.ConsumerHTTP {
				require.Equal(t, s.p.Stage.Subscribers[tp.Name], env[httpconsumerfn.EnvSubscriberURL])
				require.Equal(t, s.idOf(s.p.Secrets.Subscribers[tp.Name]), refID(env[httpconsumerfn.EnvSecretARN]))
			}

			var mine []resource
			for _, m := range mappings {
				if refID(m.Properties["FunctionName"]) == fnID {
					mine = append(mine, m)
				}
			}
			require.Len(t, mine, 1, "%s: one event source", tp.Name)
			m := mine[0].Properties
			require.Equal(t, s.idOf(s.p.Queues[tp.Name].Queue), refID(m["EventSourceArn"]), tp.Name)
			require.Equal(t, float64(tp.BatchSize), num(t, m["BatchSize"]), tp.Name)
			require.Equal(t, []any{"ReportBatchItemFailures"}, m["FunctionResponseTypes"], tp.Name)
			if tp.BatchWindow > 0 {
				require.Equal(t, tp.BatchWindow.Seconds(), num(t, m["MaximumBatchingWindowInSeconds"]), tp.Name)
			} else {
				require.Nil(t, m["MaximumBatchingWindowInSeconds"], tp.Name)
			}
			if tp.MaxConcurrency > 0 {
				require.Equal(t, float64(tp.MaxConcurrency), num(t, dig(m, "ScalingConfig", "MaximumConcurrency")), tp.Name)
			}
		}
	})
}

// A consumer's role reaches its own queue and DLQ and no other queue; it
// may not delete outbox rows or incidents.
func TestConsumerRoleTouchesOnlyItsQueues(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		require.NotEmpty(t, s.p.Consumers)
		for topic, f := range s.p.Consumers {
			_, fn := s.function(t, f.Spec.Name)
			got := actionsOn(s.statements(roleOf(t, fn)))
			own := s.idOf(s.p.Queues[topic].Queue)
			ownDLQ := s.idOf(s.p.Queues[topic].DLQ)
			for _, tp := range s.p.Topology.Topics {
				if tp.Name == topic {
					continue
				}
				require.NotContains(t, got, s.idOf(s.p.Queues[tp.Name].Queue), "%s reaches %s", topic, tp.Name)
				require.NotContains(t, got, s.idOf(s.p.Queues[tp.Name].DLQ), "%s reaches the DLQ of %s", topic, tp.Name)
			}
			require.Subset(t, []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:SendMessage"}, got[own], topic)
			require.Contains(t, got[own], "sqs:ReceiveMessage")
			require.Equal(t, []string{"sqs:SendMessage"}, got[ownDLQ], "%s: poison messages go to its DLQ", topic)
			for res, actions := range got {
				for _, a := range actions {
					require.NotContains(t, []string{"dynamodb:DeleteItem", "dynamodb:BatchWriteItem", "s3:DeleteObject", "s3:DeleteObjectVersion", "sqs:PurgeQueue"}, a, "%s on %s", topic, res)
				}
			}
			kind := s.p.Topology.Topics[slices.IndexFunc(s.p.Topology.Topics, func(tp topology.Topic) bool { return tp.Name == topic })].Consumer
			rows := []string{"dynamodb:ConditionCheckItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
			if kind == topology.ConsumerArchive || kind == topology.ConsumerPurge {
				// Batch handlers claim and complete in PartiQL batches.
				rows = []string{"dynamodb:ConditionCheckItem", "dynamodb:GetItem", "dynamodb:PartiQLUpdate", "dynamodb:PutItem", "dynamodb:UpdateItem"}
			}
			require.Equal(t, rows, got[s.idOf(s.p.Tables[table.Events.Name])], "%s on the events table", topic)
			if kind == topology.ConsumerArchive {
				require.Equal(t, []string{"s3:PutObject"}, got[s.idOf(s.p.Bucket)+"/archive/"+topic+"/*"], "%s writes its own archive prefix", topic)
			}
		}
	})
}
