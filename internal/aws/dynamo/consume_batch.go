package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/kit/bounded"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// A batch handler's claims and completions, many rows a request: PartiQL
// BatchExecuteStatement, up to 25 UPDATE statements a call. Each statement
// is billed like an UpdateItem (1 WRU a row), where TransactWriteItems
// would cost 2 a row, and the rows are independent: one statement's
// failure does not fail the others.
//
// A batched statement covers only the happy path; every item it does not
// settle goes through the single method, so each result is exactly the
// single path's:
//   - a claim is batched only for a fresh row: it exists, is not erased,
//     not completed, not processing under a live lease (the single claim's
//     condition), and carries no attempt count (PartiQL cannot add to a
//     count that may be missing, and an attempt count is exactly 1 on a
//     row nobody counted yet); it is put back in the due index if the
//     sweeper took it out (see claimStatement). Any other row (a
//     redelivery, a missing row, one held by another delivery) fails the
//     statement's condition and takes the single path, which tells
//     completed from busy and creates missing rows.
//   - a completion is batched exactly: the same attributes set and removed
//     as MarkCompleted (the row's delivery attempts with the new one), on
//     the same condition. A condition failure takes the single path too:
//     it tells a lost lease (outbox.ErrLeaseLost) from a row an erasure
//     marked meanwhile (the attempt is then appended without an answer),
//     as does any other failure.
//
// A call that fails as a whole (throttling, an emulator without PartiQL)
// sends its items down the single path. A row named twice in one batch
// (DynamoDB refuses two statements on one item in a call) is batched once;
// its repeats take the single path after the batch.

var _ consume.BatchRows = (*Events)(nil)

// batchStatements is BatchExecuteStatement's limit.
const batchStatements = 25

// batchFallbacks bounds the concurrent single-path calls of one batch.
const batchFallbacks = 8

// claimStatement is the batched claim (beginProcessing's write for a
// fresh row). Parameters: status processing, leaseOwner, leaseUntil,
// updatedAt, attemptOf, attempt, duePk; pk, sk, completed, processing,
// now (ms). PartiQL has no if_not_exists: duePk is set to the row's due
// partition, which is what beginProcessing's if_not_exists(duePk, :dp)
// leaves too (a row's partition is a function of its key and topic), so a
// row the sweeper took out of the due index while its message waited (a
// consumer lagging behind a bulk import) is claimed in the batch as well.
const claimStatement = `SET "status" = ? SET "leaseOwner" = ? SET "leaseUntil" = ? SET "updatedAt" = ? SET "attemptOf" = ? SET "attempt" = ? SET "duePk" = ? REMOVE "sweepPk"` +
	` WHERE "pk" = ? AND "sk" = ? AND "erasedAt" IS MISSING AND "attemptOf" IS MISSING AND "attempt" IS MISSING` +
	` AND "status" <> ? AND ("status" <> ? OR "leaseUntil" <= ?)`

// completeStatement is releaseProcessing's write for To=completed.
// Parameters: status completed, leaseOwner "", leaseUntil 0, nextRetryAt,
// updatedAt, completedAt; pk, sk, processing, owner.
const completeStatement = `SET "status" = ? SET "leaseOwner" = ? SET "leaseUntil" = ? SET "nextRetryAt" = ? SET "updatedAt" = ? SET "completedAt" = ? REMOVE "duePk" REMOVE "sweepPk"` +
	` WHERE "pk" = ? AND "sk" = ? AND "status" = ? AND "leaseOwner" = ?`

// completeWithAttemptsStatement is completeStatement recording the
// delivery attempts too (attempts.go): the list the claim read and the
// new attempt, so also conditional on no erasure having marked the row.
// Parameters: completeStatement's six values, tries; its four keys and
// conditions.
const completeWithAttemptsStatement = `SET "status" = ? SET "leaseOwner" = ? SET "leaseUntil" = ? SET "nextRetryAt" = ? SET "updatedAt" = ? SET "completedAt" = ? SET "tries" = ? REMOVE "duePk" REMOVE "sweepPk"` +
	` WHERE "pk" = ? AND "sk" = ? AND "status" = ? AND "leaseOwner" = ? AND "erasedAt" IS MISSING`

// BeginProcessingBatch claims each row as BeginProcessing would (see
// above): one entry per request, in order.
func (e *Events) BeginProcessingBatch(ctx context.Context, ps []consume.Processing) []consume.ClaimResult {
	out := make([]consume.ClaimResult, len(ps))
	stmts := make([]ddbtypes.BatchStatementRequest, len(ps))
	for i, p := range ps {
		key := rowKey(p.Row)
		stmts[i] = ddbtypes.BatchStatementRequest{
			Statement: aws.String(`UPDATE "` + e.Table + `" ` + claimStatement),
			Parameters: []ddbtypes.AttributeValue{
				str(string(outbox.StatusProcessing)), str(p.Owner), num(millis(p.Until)), str(FormatTime(p.Now)), str(p.Owner), num(1),
				str(table.DuePartition(p.Row.Key, p.Row.Topic)), key[table.AttrPK], key[table.AttrSK], str(string(outbox.StatusCompleted)), str(string(outbox.StatusProcessing)), num(millis(p.Now)),
			},
		}
	}
	e.batch(ctx, rowsOf(ps, func(p consume.Processing) outbox.RowRef { return p.Row }), stmts,
		func(i int) {
			// A fresh row: no attempts yet (only a consumer's claim,
			// which the statement requires absent, leads to one).
			out[i] = consume.ClaimResult{Claim: consume.Claim{State: consume.Claimed, Attempt: 1, Log: claimLog(nil, false, time.Time{})}}
		},
		func(i int, _ *ddbtypes.BatchStatementError) bool { return false },
		func(i int) {
			c, err := e.BeginProcessing(ctx, ps[i])
			out[i] = consume.ClaimResult{Claim: c, Err: err}
		})
	return out
}

// MarkCompletedBatch records each completion as MarkCompleted would: one
// error (nil for success, outbox.ErrLeaseLost) per completion, in order.
func (e *Events) MarkCompletedBatch(ctx context.Context, cs []consume.Completion) []error {
	out := make([]error, len(cs))
	stmts := make([]ddbtypes.BatchStatementRequest, len(cs))
	for i, c := range cs {
		key := rowKey(c.Row)
		stmt, params := completeStatement, []ddbtypes.AttributeValue{
			str(string(outbox.StatusCompleted)), str(""), num(0), num(millis(c.Now)), str(FormatTime(c.Now)), str(FormatTime(c.Now)),
			key[table.AttrPK], key[table.AttrSK], str(string(outbox.StatusProcessing)), str(c.Owner),
		}
		if added := newAttempts(c.Attempt, c.Log); len(added) > 0 && c.Log.Known {
			stmt = completeWithAttemptsStatement
			tries := triesValue(attemptList(c.Log.Kept, fitAnswer(c.Log.Kept, added, c.Log.Room)))
			params = append(params[:6:6], append([]ddbtypes.AttributeValue{tries}, params[6:]...)...)
		}
		stmts[i] = ddbtypes.BatchStatementRequest{Statement: aws.String(`UPDATE "` + e.Table + `" ` + stmt), Parameters: params}
	}
	e.batch(ctx, rowsOf(cs, func(c consume.Completion) outbox.RowRef { return c.Row }), stmts,
		func(int) {},
		func(i int, se *ddbtypes.BatchStatementError) bool {
			if se.Code != ddbtypes.BatchStatementErrorCodeEnumConditionalCheckFailed || strings.Contains(aws.ToString(stmts[i].Statement), `"erasedAt" IS MISSING`) {
				return false
			}
			out[i] = outbox.ErrLeaseLost
			return true
		},
		func(i int) { out[i] = e.MarkCompleted(ctx, cs[i]) })
	return out
}

func rowsOf[T any](xs []T, row func(T) outbox.RowRef) []outbox.RowRef {
	out := make([]outbox.RowRef, len(xs))
	for i, x := range xs {
		out[i] = row(x)
	}
	return out
}

// batch runs stmts (statement i writes rows[i]) in calls of at most
// batchStatements, each row once: ok(i) for a statement that succeeded,
// refused(i, err) for one that failed (true: settled), single(i) for the
// rest (failed statements not settled, calls that failed, repeated rows).
func (e *Events) batch(ctx context.Context, rows []outbox.RowRef, stmts []ddbtypes.BatchStatementRequest,
	ok func(i int), refused func(i int, err *ddbtypes.BatchStatementError) bool, single func(i int)) {
	seen := make(map[outbox.RowRef]bool, len(rows))
	var first, repeats []int
	for i, r := range rows {
		if seen[r] {
			repeats = append(repeats, i)
			continue
		}
		seen[r] = true
		first = append(first, i)
	}
	var mu sync.Mutex
	var fallback []int
	var wg sync.WaitGroup
	for start := 0; start < len(first); start += batchStatements {
		chunk := first[start:min(start+batchStatements, len(first))]
		wg.Go(func() {
			failed := e.batchCall(ctx, chunk, stmts, ok, refused)
			mu.Lock()
			fallback = append(fallback, failed...)
			mu.Unlock()
		})
	}
	wg.Wait()
	bounded.Each(len(fallback), batchFallbacks, func(k int) { single(fallback[k]) })
	for _, i := range repeats {
		single(i)
	}
}

// batchCall runs one BatchExecuteStatement and returns the items it did
// not settle.
func (e *Events) batchCall(ctx context.Context, chunk []int, stmts []ddbtypes.BatchStatementRequest,
	ok func(i int), refused func(i int, err *ddbtypes.BatchStatementError) bool) []int {
	in := &dynamodb.BatchExecuteStatementInput{Statements: make([]ddbtypes.BatchStatementRequest, len(chunk))}
	for j, i := range chunk {
		in.Statements[j] = stmts[i]
	}
	res, err := e.Client.BatchExecuteStatement(ctx, in)
	if err == nil && len(res.Responses) != len(chunk) {
		err = fmt.Errorf("%d responses for %d statements", len(res.Responses), len(chunk))
	}
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			e.log().DebugContext(ctx, "dynamo: batch statement call failed; writing its rows one by one", "statements", len(chunk), "error", err)
		}
		return chunk
	}
	var rest []int
	for j, i := range chunk {
		switch se := res.Responses[j].Error; {
		case se == nil:
			ok(i)
		case !refused(i, se):
			rest = append(rest, i)
		}
	}
	return rest
}
