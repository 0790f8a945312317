package costmodel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDurationModel(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, c := range []struct {
		op   string
		want time.Duration
	}{
		{"DynamoDB.GetItem", 5 * ms},
		{"DynamoDB.UpdateItem", 8 * ms},
		{"DynamoDB.TransactWriteItems", 20 * ms},
		{"DynamoDB.DescribeTable", 10 * ms}, // the service's figure
		{"SQS.SendMessage", 20 * ms},
		{"S3.PutObject", 100 * ms},
		{"SNS.Publish", 20 * ms}, // the default
	} {
		require.Equal(t, c.want, InRegion.Latency(c.op), c.op)
	}
	require.Equal(t, 6910*time.Microsecond, InRegion.CPUWall(256, ms).Round(10*time.Microsecond), "a 256 MB function has 256/1769 of a vCPU")
	require.Equal(t, ms, InRegion.CPUWall(1769, ms))
	require.Equal(t, ms, InRegion.CPUWall(4096, ms), "one core counted")
	require.Equal(t, 11*ms, Billed(10*ms+200*time.Microsecond), "rounded up to the millisecond")
	require.Equal(t, 10*ms, Billed(10*ms))
}
