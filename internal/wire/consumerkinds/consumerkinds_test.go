package consumerkinds_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/consumerkinds"
)

func TestCheckRefusesATopicOfAnUnregisteredKind(t *testing.T) {
	t.Parallel()
	require.NoError(t, consumerkinds.Check(topology.Default()))
	top := topology.Default().Clone()
	top.Topics[0].Consumer = "ftp"
	require.NoError(t, top.Validate(), "a well-formed kind is the topology's business")
	require.ErrorContains(t, consumerkinds.Check(top), `unknown consumer kind "ftp"`)
}

// Every kind is complete: its binary is consumer-<kind> (the function
// names and the CDK app's assets rely on it), its environment can be
// checked, and what it needs of the stage is whole.
func TestKindsAreComplete(t *testing.T) {
	t.Parallel()
	seen := map[topology.ConsumerKind]bool{}
	for _, k := range consumerkinds.All() {
		require.False(t, seen[k.Kind], "%s registered twice", k.Kind)
		seen[k.Kind] = true
		require.Equal(t, "consumer-"+string(k.Kind), k.Role, k.Kind)
		require.NotNil(t, k.Load, k.Kind)
		got, ok := consumerkinds.Of(k.Kind)
		require.True(t, ok)
		require.Equal(t, k.Role, got.Role)
		if s := k.Secret; s != nil {
			require.NotEmpty(t, s.ID, k.Kind)
			require.NotEmpty(t, s.EnvARN, k.Kind)
			require.NotEmpty(t, s.Env, k.Kind)
			require.NotEmpty(t, s.LocalValue, k.Kind)
			require.NotEmpty(t, s.WhyNoRotation, k.Kind)
			require.Contains(t, s.Description("a.topic"), "a.topic", k.Kind)
			require.Contains(t, k.Services, "secretsmanager", "%s reads its secret from Secrets Manager", k.Kind)
		}
		if o := k.Objects; o != nil {
			require.NotEmpty(t, o.EnvBucket, k.Kind)
			require.NotEmpty(t, o.Root, k.Kind)
			require.NotEmpty(t, o.Actions, k.Kind)
		}
	}
	for _, tp := range topology.Default().Topics {
		require.True(t, seen[tp.Consumer], "the default topology's %s is consumed by a registered kind", tp.Name)
	}
}
