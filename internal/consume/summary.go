package consume

import (
	"context"
	"time"
)

// summarize logs the invocation's one INFO line: what became of its
// records and how long it took. Each record's own lines are DEBUG (a
// completion) or WARN/ERROR (a failure), so at a deployed stage's INFO
// level an invocation costs one line whatever its batch size (issue 25
// lever 4: CloudWatch Logs bills every byte).
func (c *Consumer) summarize(ctx context.Context, items []*item, start time.Time) {
	n := map[outcome]int{}
	for _, it := range items {
		n[it.outcome]++
	}
	c.d.Log.InfoContext(ctx, "consume: batch", "topic", c.cfg.Topic.Name, "records", len(items),
		"completed", n[completed], "duplicates", n[duplicate], "retried", n[retried],
		"deadLettered", n[poisoned], "requeued", n[requeued], "carried", n[carried], "copies", n[copyDone],
		"durationMs", c.d.Now().Sub(start).Milliseconds())
}
