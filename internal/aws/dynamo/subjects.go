package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/subject"
)

// subjectIndexOrder is the order the subject identifier indexes are read
// in: the envelope subject, then the provider-derived owner.
var subjectIndexOrder = []string{table.IndexSubject, table.IndexOwner}

// querySubject pages the keys (keyAttr's values) of a table's items of
// q.TenantID naming q.ID in either subject identifier index (owner is
// the table's owner attribute): one index after the other, the cursor
// "<index>:<start key>". Only the tenant's entries of that identifier are
// read (keys only), never the tenant's other items.
func querySubject(ctx context.Context, client *dynamodb.Client, tableName, owner, keyAttr string, q subject.Query) ([]string, string, error) {
	idx, start := 0, ""
	if q.Cursor != "" {
		name, rest, ok := strings.Cut(q.Cursor, ":")
		idx = slices.Index(subjectIndexOrder, name)
		if !ok || idx < 0 {
			return nil, "", fmt.Errorf("dynamo: subject listing: invalid cursor %q", q.Cursor)
		}
		start = rest
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	var keys []string
	for idx < len(subjectIndexOrder) && len(keys) < limit {
		index := subjectIndexOrder[idx]
		attr := map[string]string{table.IndexSubject: table.AttrSubject, table.IndexOwner: owner}[index]
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(tableName),
			IndexName:                 aws.String(index),
			KeyConditionExpression:    aws.String("#k = :k AND tenantId = :t"),
			ExpressionAttributeNames:  map[string]string{"#k": attr},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":k": str(q.ID), ":t": str(q.TenantID)},
			Limit:                     aws.Int32(int32(limit - len(keys))),
		}
		if start != "" {
			k, err := decodeKey(start)
			if err != nil {
				return nil, "", fmt.Errorf("dynamo: subject listing: invalid cursor: %w", err)
			}
			in.ExclusiveStartKey = k
		}
		out, err := client.Query(ctx, in)
		if err != nil {
			return nil, "", fmt.Errorf("dynamo: items of subject in %s/%s: %w", tableName, index, err)
		}
		for _, item := range out.Items {
			if v, ok := item[keyAttr].(*ddbtypes.AttributeValueMemberS); ok {
				keys = append(keys, v.Value)
			}
		}
		if out.LastEvaluatedKey != nil {
			next, err := encodeKey(out.LastEvaluatedKey)
			if err != nil {
				return nil, "", err
			}
			return keys, index + ":" + next, nil
		}
		idx, start = idx+1, ""
	}
	if idx < len(subjectIndexOrder) {
		return keys, subjectIndexOrder[idx] + ":", nil
	}
	return keys, "", nil
}

// SubjectEvents pages the storage keys of a tenant's events naming a
// subject identifier (subject.Names: the envelope subject, or the owner a
// provider's payload names), through the subject indexes.
func (e *Erasure) SubjectEvents(ctx context.Context, q subject.Query) ([]string, string, error) {
	pks, next, err := querySubject(ctx, e.Events.Client, e.Events.Table, table.AttrOrderingKey, table.AttrPK, q)
	keys := make([]string, 0, len(pks))
	for _, pk := range pks {
		keys = append(keys, keyOf(pk))
	}
	return keys, next, err
}

// SubjectIncidents pages the ids of a tenant's incidents naming a subject
// identifier, whether or not their event's ledger item still exists.
func (e *Erasure) SubjectIncidents(ctx context.Context, q subject.Query) ([]string, string, error) {
	return querySubject(ctx, e.Incidents.Client, e.Incidents.Table, table.AttrOwner, table.AttrIncidentID, q)
}
