package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/bounded"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Reply is the ingest function's answer: one envelope's Result, or a
// batch's BatchReply.
type Reply struct {
	Result envelope.Result
	Batch  *envelope.BatchReply
}

// MarshalJSON is the Result for one envelope, {"results":[…]} for a batch.
func (r Reply) MarshalJSON() ([]byte, error) {
	if r.Batch != nil {
		return json.Marshal(r.Batch)
	}
	return json.Marshal(r.Result)
}

// Handle is the Lambda handler. The invoke payload is one envelope, or a
// JSON array of at most envelope.MaxBatch envelopes (PublishBatch).
func (s *Service) Handle(ctx context.Context, raw json.RawMessage) (Reply, error) {
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		res, err := s.Publish(ctx, raw)
		return Reply{Result: res}, err
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(trimmed, &raws); err != nil {
		return Reply{Result: envelope.Reject("", &envelope.Error{Code: envelope.CodeInvalidBatch,
			Message: "a batch is a JSON array of envelopes: " + err.Error()})}, nil
	}
	return Reply{Batch: &envelope.BatchReply{Results: s.PublishBatch(ctx, raws)}}, nil
}

// PublishBatch ingests several envelopes in one call, each exactly as
// Publish would (the same validation, routing, deduplication and
// results), with fewer requests: the new events are committed together
// (as many to a transaction as fit one, MaxBatchItems and MaxBatchBytes),
// their messages go out in SQS batches and their rows are marked enqueued
// together. An envelope stored already is a duplicate as with Publish (the
// transaction goes through without it). One whose id repeats an earlier
// one of the batch is published after the others, so it meets the first
// as a duplicate (or a conflict). An infrastructure failure never fails
// the call: the envelopes it kept from being stored carry Retry, the
// others their results. A batch of more than envelope.MaxBatch is
// refused whole (batch_too_large on every envelope).
//
// Order: an entity's events (a FIFO topic's message group) are sent in
// the order of the batch; the caller keeps an ordering key's events in
// one batch or in consecutive calls. Within a call an entity's events
// stored by an earlier call (duplicates whose rows are still pending) are
// re-driven before its new events are sent, and when one of its events
// cannot be stored the entity's later events of the call are not stored
// either (Retry), so a retried call never sends them out of order.
func (s *Service) PublishBatch(ctx context.Context, raws []json.RawMessage) []envelope.BatchResult {
	out := make([]envelope.BatchResult, len(raws))
	if len(raws) > envelope.MaxBatch {
		for i, raw := range raws {
			out[i].Result = envelope.Reject(peekID(raw), &envelope.Error{Code: envelope.CodeBatchTooLarge,
				Message: fmt.Sprintf("a batch takes at most %d envelopes; this one has %d", envelope.MaxBatch, len(raws))})
		}
		return out
	}
	now, owner := s.d.Now(), outbox.BatchOwner(newOwner())
	plans := make([]*plan, len(raws))
	s.each(len(raws), func(i int) {
		p, res, err := s.prepare(ctx, raws[i], now, owner)
		switch {
		case err != nil:
			out[i] = retry(res.EventID, err)
			s.d.Log.WarnContext(ctx, "ingest: batch: not stored", "eventId", res.EventID, "error", err)
		case p == nil:
			out[i].Result = res
		default:
			// The sweeper looks at a batch's rows later than at a single
			// publish's (Config.BatchDueAfter); the lease is the same.
			for k := range p.commit.Rows {
				p.commit.Rows[k].NextRetryAt = now.Add(s.cfg.BatchDueAfter)
			}
			plans[i] = p
		}
	})

	// A key the batch already holds (a repeated id) waits: one transaction
	// cannot write an item twice.
	var chunks [][]int
	var later []int
	seen := map[string]bool{}
	items, size := 0, 0
	for i, p := range plans {
		if p == nil {
			continue
		}
		keys := []string{p.commit.Record.Key}
		if p.commit.LegacyKey != "" {
			keys = append(keys, p.commit.LegacyKey)
		}
		if seen[keys[0]] || (len(keys) > 1 && seen[keys[1]]) {
			later = append(later, i)
			continue
		}
		for _, k := range keys {
			seen[k] = true
		}
		n, b := p.commit.Items(), p.commit.Bytes()
		if len(chunks) == 0 || items+n > MaxBatchItems || size+b > MaxBatchBytes {
			chunks, items, size = append(chunks, nil), 0, 0
		}
		chunks[len(chunks)-1] = append(chunks[len(chunks)-1], i)
		items, size = items+n, size+b
	}

	// An event whose ordering group lost an earlier event of the batch
	// (its transaction failed: the caller publishes it again) is not
	// stored either: stored now, it would be sent ahead of the one before
	// it.
	var committed, dups []int
	broken := map[orderingGroup]error{}
	for _, chunk := range chunks {
		kept := chunk[:0:0]
		for _, i := range chunk {
			if g, ok := s.groupOf(plans[i]); ok && broken[g] != nil {
				err := broken[g]
				out[i] = retry(plans[i].ev.ID, fmt.Errorf("an earlier event of its ordering group was not stored: %w", err))
				continue
			}
			kept = append(kept, i)
		}
		if len(kept) == 0 {
			continue
		}
		chunk = kept
		ps := make([]CommitParams, len(chunk))
		for j, i := range chunk {
			ps[j] = plans[i].commit
		}
		errs, err := s.d.Ledger.CommitBatch(ctx, ps)
		if err != nil {
			s.d.Log.WarnContext(ctx, "ingest: batch: commit failed; its events were not stored", "events", len(chunk), "error", err)
			for _, i := range chunk {
				out[i] = retry(plans[i].ev.ID, err)
				s.breaks(broken, plans[i], err)
			}
			continue
		}
		for j, i := range chunk {
			var exists *ledger.ExistsError
			switch {
			case errs[j] == nil:
				committed = append(committed, i)
			case errors.As(errs[j], &exists):
				plans[i].commit.Record.Key = exists.Key // the key it is stored under
				dups = append(dups, i)
			default:
				plans[i].log.ErrorContext(ctx, "ingest: batch: event not stored", "error", errs[j])
				out[i] = retry(plans[i].ev.ID, errs[j])
				s.breaks(broken, plans[i], errs[j])
			}
		}
	}

	// Duplicates first: one stored before this call (an earlier call that
	// died before its sends, retried) comes before the call's new events
	// in its group's sequence, so its pending rows are re-driven before
	// the new events are sent. A group's duplicates go one after the
	// other, in the batch's order; groups in parallel.
	var dupGroups [][]int
	at := map[orderingGroup]int{}
	for _, i := range dups {
		g, fifo := s.groupOf(plans[i])
		k, ok := at[g]
		if !fifo || !ok {
			k = len(dupGroups)
			at[g] = k
			dupGroups = append(dupGroups, nil)
		}
		dupGroups[k] = append(dupGroups[k], i)
	}
	s.each(len(dupGroups), func(k int) {
		for _, i := range dupGroups[k] {
			p := plans[i]
			res, err := s.duplicate(ctx, p, p.commit.Record.Key)
			if err != nil {
				out[i] = retry(p.ev.ID, err)
				continue
			}
			out[i].Result = res
		}
	})

	var jobs []outbox.Job
	owners := make([]int, 0, len(committed))
	for _, i := range committed {
		js, err := s.jobs(ctx, plans[i])
		if err != nil {
			// Stored, so not a Retry: its rows stay leased and the sweeper
			// sends them after the lease (as with Publish's error).
			plans[i].log.ErrorContext(ctx, "ingest: batch: stored but its messages could not be built; the sweeper sends them", "error", err)
			out[i].Result = envelope.Result{Status: envelope.StatusAccepted, EventID: plans[i].ev.ID, Topics: plans[i].commit.Record.Topics, PendingTopics: plans[i].commit.Record.Topics}
			continue
		}
		for range js {
			owners = append(owners, i)
		}
		jobs = append(jobs, js...)
	}
	outcomes := s.dispatcher().DispatchBatch(ctx, jobs)
	byEvent := map[int][]outbox.Outcome{}
	for j, o := range outcomes {
		byEvent[owners[j]] = append(byEvent[owners[j]], o)
	}
	for i, os := range byEvent {
		out[i].Result = s.settled(ctx, plans[i], os)
	}

	for _, i := range later {
		res, err := s.Publish(ctx, raws[i])
		if err != nil {
			out[i] = retry(plans[i].ev.ID, err)
			continue
		}
		out[i].Result = res
	}
	return out
}

// orderingGroup is a FIFO topic's message group: the tenant's sequence of
// one entity (the ordering key; "" for the tenant's whole sequence).
type orderingGroup struct{ tenant, key string }

// groupOf is the event's ordering group, and whether any of its topics
// keeps that order (a FIFO topic); on standard topics events have no
// order to keep.
func (s *Service) groupOf(p *plan) (orderingGroup, bool) {
	g := orderingGroup{p.ev.TenantID, p.commit.Record.OrderingKey}
	for _, name := range p.commit.Record.Topics {
		if t, ok := s.d.Topology.Topic(name); ok && t.FIFO {
			return g, true
		}
	}
	return g, false
}

// breaks marks the event's ordering group as missing an event of the call.
func (s *Service) breaks(broken map[orderingGroup]error, p *plan, err error) {
	if g, ok := s.groupOf(p); ok && broken[g] == nil {
		broken[g] = err
	}
}

// batchConcurrency bounds a batch's parallel work per envelope (claim
// checks, duplicates' loads).
const batchConcurrency = 8

// each runs fn(0..n-1), batchConcurrency at a time.
func (s *Service) each(n int, fn func(i int)) { bounded.Each(n, batchConcurrency, fn) }

func retry(eventID string, err error) envelope.BatchResult {
	return envelope.BatchResult{Result: envelope.Result{EventID: eventID}, Retry: err.Error()}
}
