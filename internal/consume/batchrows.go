package consume

import (
	"context"
	"fmt"
	"time"

	"github.com/siteswarm/eventplatform/internal/outbox"
)

// A BatchHandler's batch claims its messages' rows together and completes
// them together when Rows implements BatchRows: on the happy path two
// requests for the batch instead of two per message. Everything else is
// the per-message path's code: admit before the claim, admitted after it,
// finishWith after the completion, and a completion the batch could not
// write (anything but a success or a lost lease) goes through
// completeDurably and carry as before.

// admitBatch is runBatch's admission: every message claimed (and
// rehydrated) that can be. Without BatchRows it walks each lane with
// prepare. With it, it claims in rounds: round k claims the k-th message
// of every lane not blocked by a retried message before it, so a FIFO
// group keeps walk's order (a retried message blocks the rest of its
// group before they are claimed); a standard topic's batch, one message a
// lane, is one round.
func (c *Consumer) admitBatch(ctx context.Context, items []*item, deadline time.Time) {
	lanes := c.lanes(items)
	br, ok := c.d.Rows.(BatchRows)
	if !ok {
		c.eachLane(lanes, func(lane []*item) {
			walk(lane, func(it *item) { c.prepare(ctx, it, deadline) })
		})
		return
	}
	blocked := make([]*item, len(lanes))
	for k := range longest(lanes) {
		var front []*item
		var laneOf []int
		for li, lane := range lanes {
			switch {
			case k >= len(lane):
			case blocked[li] != nil:
				block(lane[k], blocked[li])
			default:
				front, laneOf = append(front, lane[k]), append(laneOf, li)
			}
		}
		if len(front) == 0 {
			continue
		}
		c.claimRound(ctx, br, front, deadline)
		for i, it := range front {
			if it.outcome == retried {
				blocked[laneOf[i]] = it
			}
		}
	}
}

// claimRound takes front (one message per lane) through admit, one
// BeginProcessingBatch for the ones that need a claim, and admitted.
func (c *Consumer) claimRound(ctx context.Context, br BatchRows, front []*item, deadline time.Time) {
	ps := make([]Processing, len(front))
	need := make([]bool, len(front))
	c.each(len(front), func(i int) { ps[i], need[i] = c.admit(ctx, front[i], deadline) })
	var claiming []int
	var reqs []Processing
	for i := range front {
		if need[i] {
			claiming, reqs = append(claiming, i), append(reqs, ps[i])
		}
	}
	if len(reqs) == 0 {
		return
	}
	res := br.BeginProcessingBatch(ctx, reqs)
	c.each(len(claiming), func(j int) {
		r := ClaimResult{Err: fmt.Errorf("batch claim returned %d results for %d claims", len(res), len(reqs))}
		if len(res) == len(reqs) {
			r = res[j]
		}
		i := claiming[j]
		c.admitted(front[i], r.Claim, r.Err, ps[i].Now)
	})
}

func longest(lanes [][]*item) int {
	n := 0
	for _, l := range lanes {
		n = max(n, len(l))
	}
	return n
}

// completeBatch writes the completions of the handler's successes (errs[i]
// nil) in one MarkCompletedBatch when Rows implements BatchRows. It
// returns, per ready item, the completion's settled result for finishWith
// (nil: success; outbox.ErrLeaseLost), or nil where finishWith is to write
// it itself: a failure, a completion the batch could not write (it gets
// completeDurably's budget and carry), no BatchRows.
func (c *Consumer) completeBatch(ctx context.Context, ready []*item, errs []error) []*error {
	out := make([]*error, len(ready))
	br, ok := c.d.Rows.(BatchRows)
	if !ok {
		return out
	}
	var done []int
	var cs []Completion
	for i, it := range ready {
		if errs[i] == nil {
			done = append(done, i)
			cs = append(cs, Completion{Row: it.row(c.cfg.Topic.Name), Owner: it.rec.MessageId, Now: c.d.Now(),
				Attempt: it.attempt(outbox.OutcomeDelivered, nil), Log: it.log})
		}
	}
	if len(cs) == 0 {
		return out
	}
	res := br.MarkCompletedBatch(ctx, cs)
	if len(res) != len(cs) {
		c.d.Log.ErrorContext(ctx, "consume: batch completion returned the wrong number of results; completing one by one", "topic", c.cfg.Topic.Name, "results", len(res), "completions", len(cs))
		return out
	}
	for j, i := range done {
		if err := res[j]; err == nil || isLeaseLost(err) {
			out[i] = &err
		}
	}
	return out
}
