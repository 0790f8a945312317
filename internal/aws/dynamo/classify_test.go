package dynamo

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tce := func(codes ...string) error {
		var rs []ddbtypes.CancellationReason
		for _, c := range codes {
			rs = append(rs, ddbtypes.CancellationReason{Code: aws.String(c)})
		}
		return &ddbtypes.TransactionCanceledException{CancellationReasons: rs}
	}
	cases := []struct {
		name string
		err  error
		want txClass
		at   int
	}{
		{"ledger exists", tce("ConditionalCheckFailed", "None"), txConditionFailed, 0},
		{"conflict", tce("None", "TransactionConflict"), txRetry, -1},
		{"throttled", tce("ThrottlingError", "None"), txRetry, -1},
		{"capacity", tce("ProvisionedThroughputExceeded"), txRetry, -1},
		{"orphan row", tce("None", "ConditionalCheckFailed"), txConditionFailed, 1},
		{"legacy key", tce("None", "None", "ConditionalCheckFailed"), txConditionFailed, 2},
		{"validation", tce("ValidationError", "None"), txFatal, -1},
		{"in progress", &ddbtypes.TransactionInProgressException{}, txRetry, -1},
		{"top-level throttle", &ddbtypes.ProvisionedThroughputExceededException{}, txRetry, -1},
		{"other", errors.New("boom"), txFatal, -1},
	}
	for _, tc := range cases {
		class, at := classify(tc.err)
		require.Equal(t, tc.want, class, tc.name)
		require.Equal(t, tc.at, at, tc.name)
	}
}
