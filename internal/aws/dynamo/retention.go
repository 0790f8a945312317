package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/retention"
)

// Retention keeps tenants' retention policies in the jobs table (the jobs
// they drive read it, and every function that starts or runs them already
// holds the table): one item per tenant in a single collection (pk
// RETENTION, sk TENANT#<tenant>), so the daily schedule lists every tenant
// with a policy with one Query. The items carry none of the attributes the
// table's indexes or TTL read (no tenantId, kind, createdAt, duePk or
// expiresAt): a policy never expires and is never listed as a job.
type Retention struct {
	Client *dynamodb.Client
	Table  string
}

var _ retention.Store = (*Retention)(nil)

const (
	retentionPK       = "RETENTION"
	retentionSKPrefix = "TENANT#"
)

func (s *Retention) key(tenant string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{table.AttrPK: str(retentionPK), table.AttrSK: str(retentionSKPrefix + tenant)}
}

// Get reads a tenant's policy (strongly consistent).
func (s *Retention) Get(ctx context.Context, tenant string) (retention.Policy, bool, error) {
	out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table), Key: s.key(tenant), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return retention.Policy{}, false, fmt.Errorf("dynamo: read the retention policy of %s: %w", tenant, err)
	}
	if len(out.Item) == 0 {
		return retention.Policy{}, false, nil
	}
	var p retention.Policy
	if err := json.Unmarshal([]byte(strOf(out.Item["policy"])), &p); err != nil {
		return retention.Policy{}, false, fmt.Errorf("dynamo: decode the retention policy of %s: %w", tenant, err)
	}
	return p, true, nil
}

// Put writes p as version p.Version+1, conditional on the stored one
// being p.Version (none for 0).
func (s *Retention) Put(ctx context.Context, p retention.Policy) (retention.Policy, error) {
	next := p
	next.Version++
	body, err := json.Marshal(next)
	if err != nil {
		return retention.Policy{}, err
	}
	item := s.key(p.TenantID)
	item["policy"], item["version"] = str(string(body)), num(int64(next.Version))
	in := &dynamodb.PutItemInput{TableName: aws.String(s.Table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}
	if p.Version > 0 {
		in.ConditionExpression = aws.String("version = :v")
		in.ExpressionAttributeValues = map[string]ddbtypes.AttributeValue{":v": num(int64(p.Version))}
	}
	_, err = s.Client.PutItem(ctx, in)
	var ccf *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return retention.Policy{}, retention.ErrConflict
	}
	if err != nil {
		return retention.Policy{}, fmt.Errorf("dynamo: write the retention policy of %s: %w", p.TenantID, err)
	}
	return next, nil
}

// Tenants pages the tenants with a policy (sort key order).
func (s *Retention) Tenants(ctx context.Context, cursor string) ([]string, string, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.Table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": str(retentionPK)},
		ProjectionExpression:      aws.String("pk, sk"),
		Limit:                     aws.Int32(500),
	}
	if cursor != "" {
		start, err := decodeKey(cursor)
		if err != nil {
			return nil, "", fmt.Errorf("dynamo: list retention policies: invalid cursor: %w", err)
		}
		in.ExclusiveStartKey = start
	}
	out, err := s.Client.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: list retention policies: %w", err)
	}
	var tenants []string
	for _, it := range out.Items {
		tenants = append(tenants, strings.TrimPrefix(strOf(it[table.AttrSK]), retentionSKPrefix))
	}
	next := ""
	if out.LastEvaluatedKey != nil {
		if next, err = encodeKey(out.LastEvaluatedKey); err != nil {
			return nil, "", err
		}
	}
	return tenants, next, nil
}
