package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/ledger"
)

// CommitBatch writes several events (each as Commit would: its ledger item
// conditional on the key being new, its outbox rows, its legacy check) in
// one TransactWriteItems. A cancellation names every item whose condition
// failed: those events are answered (*ledger.ExistsError for a ledger Put
// or a legacy check, the orphan-row error for a row) and the transaction
// runs again without them, so the others are still committed together.
// Conflicts and throttling are retried with backoff as in Commit; any
// other failure is returned with nothing committed.
func (e *Events) CommitBatch(ctx context.Context, ps []ingest.CommitParams) ([]error, error) {
	errs := make([]error, len(ps))
	type span struct{ event, first, legacyAt int }
	live := make([]int, 0, len(ps)) // the events still to commit
	for i := range ps {
		live = append(live, i)
	}
	built := make([][]ddbtypes.TransactWriteItem, len(ps))
	legacy := make([]int, len(ps))
	for i, p := range ps {
		items, legacyAt, err := e.commitItems(p)
		if err != nil {
			return nil, err
		}
		built[i], legacy[i] = items, legacyAt
	}
	attempts := e.CommitAttempts
	if attempts <= 0 {
		attempts = 6
	}
	retries := 0
	for len(live) > 0 {
		var (
			items []ddbtypes.TransactWriteItem
			spans []span
			token = sha256.New()
		)
		token.Write([]byte(e.Table))
		for _, i := range live {
			spans = append(spans, span{event: i, first: len(items), legacyAt: legacy[i]})
			items = append(items, built[i]...)
			owner := ""
			if len(ps[i].Rows) > 0 {
				owner = ps[i].Rows[0].LeaseOwner
			}
			token.Write([]byte("|" + owner + "|" + ps[i].Record.Key))
		}
		// One token per set of events (see Commit): a round without some
		// of them is another request.
		in := &dynamodb.TransactWriteItemsInput{TransactItems: items, ClientRequestToken: aws.String(hex.EncodeToString(token.Sum(nil)[:16]))}
		_, err := e.Client.TransactWriteItems(ctx, in)
		if err == nil {
			return errs, nil
		}
		failed := conditionFailures(err)
		if len(failed) == 0 {
			class, _ := classify(err)
			if class != txRetry {
				return nil, fmt.Errorf("dynamo: commit batch of %d events: %w", len(live), err)
			}
			if retries++; retries >= attempts {
				return nil, fmt.Errorf("dynamo: commit batch of %d events: gave up after %d attempts: %w", len(live), retries, err)
			}
			e.log().WarnContext(ctx, "dynamo: batch commit cancelled, retrying", "events", len(live), "attempt", retries, "error", err)
			if err := clock.Sleep(ctx, e.backoff(retries)); err != nil {
				return nil, err
			}
			continue
		}
		// An event is answered by its first failing item: the ledger Put
		// or the legacy check (a duplicate, whose rows fail too), else a
		// row (an orphan).
		answered := map[int]bool{}
		offsets := map[int][]int{}
		for _, at := range failed {
			// The span holding item at: the last one starting at or before it.
			k := 0
			for k+1 < len(spans) && spans[k+1].first <= at {
				k++
			}
			offsets[k] = append(offsets[k], at-spans[k].first)
		}
		for k, offs := range offsets {
			sp := spans[k]
			p := ps[sp.event]
			switch {
			case slices.Contains(offs, 0):
				errs[sp.event] = &ledger.ExistsError{Key: p.Record.Key}
			case sp.legacyAt >= 0 && slices.Contains(offs, sp.legacyAt):
				errs[sp.event] = &ledger.ExistsError{Key: p.LegacyKey}
			default:
				errs[sp.event] = fmt.Errorf("dynamo: commit %s: an outbox row exists without its ledger item (written before rows were tied to their ledger item); delete it to accept the event: %w", p.Record.Key, err)
			}
			answered[sp.event] = true
		}
		rest := live[:0:0]
		for _, i := range live {
			if !answered[i] {
				rest = append(rest, i)
			}
		}
		live = rest
	}
	return errs, nil
}

// conditionFailures are the indexes of the items whose condition failed in
// a cancelled transaction (none for any other error).
func conditionFailures(err error) []int {
	var tce *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil
	}
	var at []int
	for i, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			at = append(at, i)
		}
	}
	return at
}
