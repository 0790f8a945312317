package dynamo

import (
	"context"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/outbox"
)

var _ outbox.BatchMarker = (*Events)(nil)

// statementBatch is the most statements of a BatchExecuteStatement.
const statementBatch = 25

// MarkEnqueuedBatch records successful sends as MarkEnqueued does, 25 rows
// to a request: a PartiQL BatchExecuteStatement of conditional UPDATEs,
// each applied (and billed: one write unit, as an UpdateItem) on its own,
// unlike a transaction, which costs two per item and fails whole. A
// statement whose condition fails is ErrLeaseLost (the row moved on: a
// consumer took it); any other statement failure, and a request that fails
// whole (throttled, or an endpoint without PartiQL such as the embedded
// emulator), falls back to MarkEnqueued for those rows.
func (e *Events) MarkEnqueuedBatch(ctx context.Context, rs []outbox.Enqueued) []error {
	errs := make([]error, len(rs))
	stmt := `UPDATE "` + strings.ReplaceAll(e.Table, `"`, `""`) + `" SET "status" = ? SET leaseOwner = ? SET leaseUntil = ? SET updatedAt = ? REMOVE sweepPk` +
		` WHERE pk = ? AND sk = ? AND leaseOwner = ? AND ("status" = ? OR "status" = ?)`
	var (
		wg     sync.WaitGroup
		single = func(i int) {
			wg.Go(func() { errs[i] = e.MarkEnqueued(ctx, rs[i].Row, rs[i].Owner, rs[i].Now) })
		}
	)
	for start := 0; start < len(rs); start += statementBatch {
		end := min(start+statementBatch, len(rs))
		// DynamoDB refuses a row twice in one request (DuplicateItem):
		// the repeat goes alone.
		seen := map[outbox.RowRef]bool{}
		var idx []int
		var sts []ddbtypes.BatchStatementRequest
		for i := start; i < end; i++ {
			r := rs[i]
			if seen[r.Row] {
				single(i)
				continue
			}
			seen[r.Row] = true
			idx = append(idx, i)
			sts = append(sts, ddbtypes.BatchStatementRequest{Statement: aws.String(stmt), Parameters: []ddbtypes.AttributeValue{
				str(string(outbox.StatusEnqueued)), str(""), num(0), str(FormatTime(r.Now)),
				str(EventPK(r.Row.Key)), str(DispatchSK(r.Row.Topic)),
				str(r.Owner), str(string(outbox.StatusPending)), str(string(outbox.StatusFailed)),
			}})
		}
		if len(sts) == 0 {
			continue
		}
		out, err := e.Client.BatchExecuteStatement(ctx, &dynamodb.BatchExecuteStatementInput{Statements: sts})
		if err != nil || len(out.Responses) != len(sts) {
			if err != nil {
				e.log().DebugContext(ctx, "dynamo: batch mark enqueued failed whole; marking one by one", "rows", len(sts), "error", err)
			}
			for _, i := range idx {
				single(i)
			}
			continue
		}
		for k, resp := range out.Responses {
			i := idx[k]
			switch {
			case resp.Error == nil:
			case resp.Error.Code == ddbtypes.BatchStatementErrorCodeEnumConditionalCheckFailed:
				errs[i] = outbox.ErrLeaseLost
			default:
				single(i)
			}
		}
	}
	wg.Wait()
	return errs
}
