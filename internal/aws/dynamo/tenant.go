package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/pagecursor"
	"github.com/siteswarm/eventplatform/internal/operator"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/ledger"
)

// ListTenant returns a page of a tenant's events newest first from the
// tenant index, created in [since, until) (zero: unbounded). The records are
// summaries (no payload, no payload hash); next continues the listing and is
// "" when there is no more.
func (e *Events) ListTenant(ctx context.Context, q operator.TenantQuery) (records []ledger.Record, next string, err error) {
	tenantID, since, until, limit, cursor := q.TenantID, q.Since, q.Until, q.Limit, q.Cursor
	if tenantID == "" {
		return nil, "", fmt.Errorf("dynamo: list events: a tenant is required")
	}
	key := "tenantId = :t"
	values := map[string]ddbtypes.AttributeValue{":t": str(tenantID)}
	// tenantSk is "<createdAt>#<eventId>": "#" sorts before every id
	// character, and "$" right after it bounds a whole millisecond.
	switch {
	case !since.IsZero() && !until.IsZero():
		key += " AND tenantSk BETWEEN :a AND :b"
		values[":a"], values[":b"] = str(FormatTime(since)), str(FormatTime(until.Add(-time.Millisecond))+"$")
	case !since.IsZero():
		key += " AND tenantSk >= :a"
		values[":a"] = str(FormatTime(since))
	case !until.IsZero():
		key += " AND tenantSk < :b"
		values[":b"] = str(FormatTime(until))
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(e.Table),
		IndexName:                 aws.String(table.IndexTenant),
		KeyConditionExpression:    aws.String(key),
		ExpressionAttributeValues: values,
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit)),
	}
	if cursor != "" {
		start, err := decodeKey(cursor)
		if err == nil {
			// A cursor only continues the listing it came from.
			if t, _ := start[table.AttrTenantID].(*ddbtypes.AttributeValueMemberS); t == nil || t.Value != tenantID {
				err = pagecursor.ErrInvalid
			}
		}
		if err != nil {
			return nil, "", fmt.Errorf("dynamo: list events: invalid cursor: %w", err)
		}
		in.ExclusiveStartKey = start
	}
	out, err := e.Client.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: list events of %s: %w", tenantID, err)
	}
	for _, item := range out.Items {
		var it ledgerItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return nil, "", fmt.Errorf("dynamo: decode ledger: %w", err)
		}
		records = append(records, it.record())
	}
	if out.LastEvaluatedKey != nil {
		if next, err = encodeKey(out.LastEvaluatedKey); err != nil {
			return nil, "", err
		}
	}
	return records, next, nil
}
