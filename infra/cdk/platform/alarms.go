package platform

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/dlqarchiver"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/outboxsweep"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
)

// Alarm thresholds.
const (
	alarmPeriod = 5 * time.Minute
	// oldestMessageAge: a healthy topic queue drains within seconds; a
	// message older than this is a stuck consumer, a subscriber that keeps
	// failing (backoff) or a backlog beyond the consumer's concurrency.
	oldestMessageAge = 30 * time.Minute
)

// alarmSpec is one CloudWatch alarm on the alert topic.
type alarmSpec struct {
	ID          string
	Name        string // evp-<stage>-<name>
	Description string
	Metric      awscloudwatch.IMetric
	Threshold   float64
	// Periods evaluated (all must breach); 1 if zero.
	Periods int
	// Below alarms when the metric falls under the threshold, and treats
	// missing data as breaching (something stopped reporting).
	Below bool
}

func (p *Platform) alarm(a alarmSpec) awscloudwatch.Alarm {
	periods := max(a.Periods, 1)
	props := &awscloudwatch.AlarmProps{
		AlarmName:          jsii.String(p.Stage.Prefix() + "-" + a.Name),
		AlarmDescription:   jsii.String(a.Description),
		Metric:             a.Metric,
		Threshold:          jsii.Number(a.Threshold),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		EvaluationPeriods:  jsii.Number(float64(periods)),
		DatapointsToAlarm:  jsii.Number(float64(periods)),
		// No data means nothing happened (no messages, no errors).
		TreatMissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
	}
	if a.Below {
		props.ComparisonOperator = awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD
		props.TreatMissingData = awscloudwatch.TreatMissingData_BREACHING
	}
	al := awscloudwatch.NewAlarm(p.Stack, jsii.String(a.ID+"Alarm"), props)
	for _, topic := range p.alarmTopics() {
		action := awscloudwatchactions.NewSnsAction(topic)
		al.AddAlarmAction(action)
		al.AddOkAction(action)
	}
	p.Alarms = append(p.Alarms, al)
	return al
}

// newAlarms alarms on every failure mode an operator must act on.
func (p *Platform) newAlarms() {
	for _, tp := range p.Topology.Topics {
		qs := p.Queues[tp.Name]
		id, name := logicalName(tp.Name), slug(tp.Name)
		p.alarm(alarmSpec{
			ID: id + "DlqDepth", Name: name + "-dlq-depth",
			Description: "Messages in the " + tp.Name + " DLQ. The DLQ archiver drains it into incidents at once, so a visible message " +
				"means a new dead letter or an archiver that cannot keep up: check `evp dlq list --topic " + tp.Name + "` and the dlq-archiver logs.",
			Metric: qs.DLQ.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
				Period: duration(alarmPeriod), Statistic: jsii.String("Maximum"),
			}),
			Threshold: 0,
		})
		p.alarm(alarmSpec{
			ID: id + "OldestMessage", Name: name + "-oldest-message",
			Description: "The oldest message on " + tp.Name + " has waited more than " + oldestMessageAge.String() +
				": the consumer is failing (see its logs and the subscriber), throttled, or not deployed.",
			Metric: qs.Queue.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{
				Period: duration(alarmPeriod), Statistic: jsii.String("Maximum"),
			}),
			Threshold: oldestMessageAge.Seconds(),
			Periods:   2,
		})
	}
	// A topic whose consumer kind has no function in this release (the
	// cache purge consumer comes with the cache purge service) still gets
	// its events routed: say so loudly instead of letting them expire.
	for _, topic := range p.Unconsumed {
		qs := p.Queues[topic]
		p.alarm(alarmSpec{
			ID: logicalName(topic) + "Unconsumed", Name: slug(topic) + "-unconsumed",
			Description: "Messages are waiting on " + topic + ", which has no consumer deployed yet; they expire after the queue retention (" +
				queueRetention.String() + "). Deploy its consumer or stop routing to it (docs/deploy.md#unconsumed-topics).",
			Metric: qs.Queue.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
				Period: duration(alarmPeriod), Statistic: jsii.String("Maximum"),
			}),
			Threshold: 0,
		})
	}
	// Function errors: for ingest these are infrastructure failures before
	// the commit (callers retry); for every other function a crash or a
	// timeout, never a per-message failure (those are partial batch
	// responses).
	for _, name := range sortedKeys(p.Functions) {
		f := p.Functions[name]
		p.alarm(alarmSpec{
			ID: f.Spec.ID + "Errors", Name: f.Spec.Name + "-errors",
			Description: "Function " + p.Stage.Prefix() + "-" + f.Spec.Name + " returned errors (crash, timeout or an infrastructure failure). See its logs.",
			Metric: f.Fn.MetricErrors(&awscloudwatch.MetricOptions{
				Period: duration(alarmPeriod), Statistic: jsii.String("Sum"),
			}),
			Threshold: 0,
		})
	}
	p.newMetricAlarms()
}

// Thresholds of the alarms on the platform's own (EMF) metrics.
const (
	// purgeRateLimitedAlarm: a few 429s are the pacer finding the limit;
	// sustained ones mean purges are being delayed for every tenant.
	purgeRateLimitedAlarm = 20
	// jobsDueAlarm: a woken job runs within seconds and a lost wake is
	// found by the next sweep (15 minutes); two sweeps without progress
	// mean the worker is not running them.
	jobsDueAlarm = 2 * JobsSweepSchedule
	// outboxLagLimit: rows become due after their lease (60 s) or retry
	// delay (2 min, growing) and the sweeper runs every 2 minutes, so a due
	// row older than this means dispatches are not draining.
	outboxLagLimit = 10 * time.Minute
)

// newMetricAlarms alarms on the metrics the functions emit as CloudWatch
// EMF lines (namespace, names and dimensions come from the emitting
// packages, so they cannot drift apart).
// emf is a metric the functions emit as EMF lines. Deployed functions add
// the stage to every metric (metric.ForStage), so this stage's alarms see
// only its series.
func (p *Platform) emf(name string, dims map[string]string, stat string) awscloudwatch.Metric {
	dm := map[string]*string{metric.DimensionStage: jsii.String(p.Stage.Prefix())}
	for k, v := range dims {
		dm[k] = jsii.String(v)
	}
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String(metric.DefaultNamespace),
		MetricName:    jsii.String(name),
		DimensionsMap: &dm,
		Period:        duration(alarmPeriod),
		Statistic:     jsii.String(stat),
	})
}

func (p *Platform) newMetricAlarms() {
	emf := p.emf
	sweeper := map[string]string{"Function": RoleSweeper}
	p.alarm(alarmSpec{
		ID: "OutboxLag", Name: "outbox-lag",
		Description: "The oldest due outbox row has waited more than " + outboxLagLimit.String() +
			" (sweeper metric " + outboxsweep.MetricLag + "): dispatches are not reaching their queues. Check the sweeper logs and SQS.",
		Metric:    emf(outboxsweep.MetricLag, sweeper, "Maximum"),
		Threshold: outboxLagLimit.Seconds(),
		Periods:   2,
	})
	p.alarm(alarmSpec{
		ID: "OutboxAbandoned", Name: "outbox-abandoned",
		Description: "The sweeper abandoned dispatches after their last outbox attempt; each one is an incident (`evp dlq list --status open`).",
		Metric:      emf(outboxsweep.MetricAbandoned, sweeper, "Sum"),
		Threshold:   0,
	})
	if f := p.Functions["sweeper"]; f != nil {
		p.alarm(alarmSpec{
			ID: "SweeperNotRunning", Name: "sweeper-not-running",
			Description: "The outbox sweeper has not run for 10 minutes (schedule every " + SweepSchedule.String() + "): stranded dispatches are not being retried.",
			Metric: f.Fn.MetricInvocations(&awscloudwatch.MetricOptions{
				Period: duration(alarmPeriod), Statistic: jsii.String("Sum"),
			}),
			Threshold: 1,
			Periods:   2,
			Below:     true,
		})
	}
	p.alarm(alarmSpec{
		ID: "ReplaysStuck", Name: "replays-stuck",
		Description: "Replays stayed retrying longer than " + incident.DefaultStuckAfter.String() + " without being confirmed (sweeper metric " +
			outboxsweep.MetricStuckReplays + "); the sweeper reopened them. A replay died midway or its messages are failing slowly: `evp dlq list --status open`, replay again.",
		Metric:    emf(outboxsweep.MetricStuckReplays, sweeper, "Sum"),
		Threshold: 0,
	})
	p.alarm(alarmSpec{
		ID: "SweepPartitionErrors", Name: "sweep-partition-errors",
		Description: "The sweeper could not read some sweeper-index partitions (metric " + outboxsweep.MetricPartitionErrors +
			"); it swept the others. Rows in the failed partitions are not retried until it can: see the sweeper logs (failedPartitions).",
		Metric:    emf(outboxsweep.MetricPartitionErrors, sweeper, "Sum"),
		Threshold: 0,
		Periods:   2,
	})
	p.alarm(alarmSpec{
		ID: "StripeUnknownAccount", Name: "stripe-unknown-account",
		Description: "Stripe Connect events arrived from an account the tenant map does not name (answered 422 " + string(webhook.CodeUnknownAccount) +
			"; Stripe keeps retrying for 3 days): map the account in stripeAccountTenants (cdk.json) and deploy, or investigate the account.",
		Metric:    emf(webhook.MetricRefused, map[string]string{"Provider": stripe.Source, "Code": string(webhook.CodeUnknownAccount)}, "Sum"),
		Threshold: 0,
	})
	for _, tp := range p.Topology.Topics {
		p.alarm(alarmSpec{
			ID: logicalName(tp.Name) + "IncidentsOpened", Name: slug(tp.Name) + "-incidents-opened",
			Description: "Dead letters of " + tp.Name + " became incidents (archiver metric " + dlqarchiver.MetricIncidentsOpened +
				"): `evp dlq list --topic " + tp.Name + "`, fix the cause, then replay.",
			Metric:    emf(dlqarchiver.MetricIncidentsOpened, map[string]string{consume.DimensionTopic: tp.Name}, "Sum"),
			Threshold: 0,
		})
	}
	p.alarm(alarmSpec{
		ID: "JobsFailed", Name: "jobs-failed",
		Description: "Durable jobs failed (metric " + jobs.MetricFailed + "): each opened an incident. `evp jobs list --status failed`, fix the cause, then replay the incident or `evp jobs restart`.",
		Metric:      emf(jobs.MetricFailed, nil, "Sum"),
		Threshold:   0,
	})
	p.alarm(alarmSpec{
		ID: "JobsOldestDue", Name: "jobs-oldest-due",
		Description: "A durable job has been due for over " + jobsDueAlarm.String() + " (jobs-sweep metric " + jobs.MetricOldestDue +
			"): wakes are not being processed. Check jobs-worker errors and the jobs DLQ.",
		Metric:    emf(jobs.MetricOldestDue, map[string]string{"Function": RoleJobsSweep}, "Maximum"),
		Threshold: jobsDueAlarm.Seconds(),
	})
	p.alarm(alarmSpec{
		ID: "JobsDLQ", Name: "jobs-dlq",
		Description: "Job wakes reached the jobs DLQ (malformed, or failing " + fmt.Sprint(jobs.QueueMaxReceiveCount) + " times). The jobs stay due in the table; the sweep wakes them again. Inspect the DLQ's messages.",
		Metric: p.Jobs.DLQ.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: duration(alarmPeriod), Statistic: jsii.String("Maximum"),
		}),
		Threshold: 0,
	})
	if p.hasPurgeConsumer() {
		p.alarm(alarmSpec{
			ID: "PurgeFailures", Name: "purge-failures",
			Description: "Cache purge jobs failed for good (metric " + cachepurge.MetricFailures + "): rejected by Cloudflare (token, zone) or still rate limited after " +
				fmt.Sprint(cachepurge.MaxAttempts) + " attempts. Stale pages stay cached until their TTL: `evp purge dlq`, fix the cause, replay the incidents.",
			Metric:    emf(cachepurge.MetricFailures, nil, "Sum"),
			Threshold: 0,
		})
		p.alarm(alarmSpec{
			ID: "PurgeRateLimited", Name: "purge-rate-limited",
			Description: "Cloudflare answered 429 to more than " + fmt.Sprint(purgeRateLimitedAlarm) + " purge calls in " + alarmPeriod.String() +
				" for two periods (metric " + cachepurge.MetricRetries429 + "): the account's purge limit is shared by every tenant; lower purgeRate or look for a tenant bursting.",
			Metric:    emf(cachepurge.MetricRetries429, nil, "Sum"),
			Threshold: purgeRateLimitedAlarm,
			Periods:   2,
		})
	}
}

// hasPurgeConsumer reports whether any purge topic's consumer is deployed.
func (p *Platform) hasPurgeConsumer() bool {
	for _, tp := range p.Topology.Topics {
		if tp.Consumer == topology.ConsumerPurge && p.Consumers[tp.Name] != nil {
			return true
		}
	}
	return false
}
