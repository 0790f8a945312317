package costmodel

import (
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/aws/table"
)

// ItemSize is an item's size by DynamoDB's rules (table.ItemSize, which
// the adapters use to keep a write within its units).
func ItemSize(item map[string]ddbtypes.AttributeValue) int { return table.ItemSize(item) }

// ValueSize is one value's size (table.ValueSize).
func ValueSize(v ddbtypes.AttributeValue) int { return table.ValueSize(v) }
