package consume

import (
	"time"

	"github.com/siteswarm/eventplatform/internal/observe/metric"
)

// Metric names (CloudWatch, namespace metric.DefaultNamespace, dimension
// Topic). Dashboards and alarms key on them: never rename one.
const (
	// MetricProcessed counts messages whose handler succeeded.
	MetricProcessed = "MessagesProcessed"
	// MetricDuplicate counts redeliveries acknowledged without running the
	// handler (the side effect had happened).
	MetricDuplicate = "MessagesDuplicate"
	// MetricFailed counts failures of a message: its handler's error, or a
	// runtime step (claim, payload fetch) failing for it.
	MetricFailed = "MessagesFailed"
	// MetricRetried counts messages reported for redelivery.
	MetricRetried = "MessagesRetried"
	// MetricPoisoned counts messages moved to the DLQ by the consumer.
	MetricPoisoned = "MessagesPoisoned"
	// MetricHeld counts failed messages the topic's breaker held instead
	// of dead-lettering them (delayed, or re-queued as a fresh copy).
	MetricHeld = "MessagesHeld"
	// MetricCompletionsCarried counts completions that could not be
	// written within an invocation and were sent on in a copy of the
	// message (each hop counts).
	MetricCompletionsCarried = "CompletionsCarried"
	// MetricHandlerDuration is the handler's run time (ms).
	MetricHandlerDuration = "HandlerDuration"
	// MetricLag is now minus the envelope timestamp when a message
	// completes (ms): the end-to-end latency producers and subscribers see.
	MetricLag = "EndToEndLag"
	// DimensionTopic is the metrics' dimension.
	DimensionTopic = "Topic"
)

// record emits the item's metrics (one EMF line per message, so
// CloudWatch percentiles are exact) and ends its trace segment.
func (c *Consumer) record(it *item) {
	it.end(it.failErr())
	if c.d.Metrics == nil {
		return
	}
	one := func(name string) metric.Metric { return metric.Metric{Name: name, Unit: metric.Count, Value: 1} }
	var ms []metric.Metric
	switch it.outcome {
	case completed, carried:
		ms = append(ms, one(MetricProcessed))
		if ts := it.msg.Event.Timestamp; !ts.IsZero() {
			ms = append(ms, metric.Metric{Name: MetricLag, Unit: metric.Milliseconds, Value: millis(c.d.Now().Sub(ts))})
		}
	case duplicate:
		ms = append(ms, one(MetricDuplicate))
	case retried:
		ms = append(ms, one(MetricRetried))
	case poisoned:
		ms = append(ms, one(MetricPoisoned))
	case requeued:
		ms = append(ms, one(MetricHeld))
	}
	if it.carried {
		ms = append(ms, one(MetricCompletionsCarried))
	}
	if it.held && it.outcome == retried {
		ms = append(ms, one(MetricHeld))
	}
	if it.fail != nil && !it.fail.benign {
		ms = append(ms, one(MetricFailed))
	}
	if it.ran {
		ms = append(ms, metric.Metric{Name: MetricHandlerDuration, Unit: metric.Milliseconds, Value: millis(it.took)})
	}
	c.d.Metrics.Emit(map[string]string{DimensionTopic: c.cfg.Topic.Name}, ms...)
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
