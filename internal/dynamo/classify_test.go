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
	}{
		{"ledger exists", tce("ConditionalCheckFailed", "None"), txDuplicate},
		{"conflict", tce("None", "TransactionConflict"), txRetry},
		{"throttled", tce("ThrottlingError", "None"), txRetry},
		{"capacity", tce("ProvisionedThroughputExceeded"), txRetry},
		{"orphan row", tce("None", "ConditionalCheckFailed"), txFatal},
		{"validation", tce("ValidationError", "None"), txFatal},
		{"in progress", &ddbtypes.TransactionInProgressException{}, txRetry},
		{"top-level throttle", &ddbtypes.ProvisionedThroughputExceededException{}, txRetry},
		{"other", errors.New("boom"), txFatal},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, classify(tc.err), tc.name)
	}
}
