package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableActive is a health probe: the table answers and is ACTIVE (or
// UPDATING, which still serves reads and writes).
func TableActive(ctx context.Context, c *dynamodb.Client, name string) error {
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("describe %s: %w", name, err)
	}
	switch s := out.Table.TableStatus; s {
	case ddbtypes.TableStatusActive, ddbtypes.TableStatusUpdating:
		return nil
	default:
		return fmt.Errorf("table %s is %s", name, s)
	}
}
