package table_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/table"
)

// One tenant's event keys, Stripe's and an internal producer's alike,
// spread evenly over the tenant-shard index's partitions (issue 37: no
// one partition takes a tenant's writes).
func TestTenantPartitionSpreadsOneTenantsKeys(t *testing.T) {
	t.Parallel()
	for _, key := range []func(i int) string{
		func(i int) string { return fmt.Sprintf("evt_1PzB7sLkdIwHu7ix%06d", i) },
		func(i int) string { return fmt.Sprintf("acme/inq_%d", i) },
	} {
		const n = 16000
		per := map[string]int{}
		for i := range n {
			per[table.TenantPartition("acme", key(i))]++
		}
		require.Len(t, per, table.TenantShards, "every shard is used")
		for s := range table.TenantShards {
			got := per[table.TenantShardPartition("acme", s)]
			require.InDelta(t, n/table.TenantShards, got, n/table.TenantShards/10, "shard %d takes its share (±10%%)", s)
		}
	}
	require.Equal(t, table.TenantPartition("acme", "evt_1"), table.TenantPartition("acme", "evt_1"), "stable")
	require.Equal(t, "globex#3", table.TenantShardPartition("globex", 3))
}
