package devstack_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

func TestSettingsLayersAndBanner(t *testing.T) {
	t.Parallel()
	env := envconf.FromMap(map[string]string{
		devstack.SettingStripeSecret: "whsec_from_the_environment_1234",
		devstack.SettingSweepEvery:   "1m",
		"EMPTY":                      "  ",
	})
	st, err := devstack.Start(context.Background(), devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Env: env,
		Settings: map[string]string{devstack.SettingSweepEvery: "5s"},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	require.Equal(t, "5s", st.Settings.String(devstack.SettingSweepEvery, ""), "a flag beats the environment")
	require.Equal(t, []string{"whsec_from_the_environment_1234"}, st.StripeSecrets(), "the environment beats the default")
	require.Equal(t, devstack.DefaultAdminKey, st.AdminKey(), "the default when unset")
	require.Equal(t, "fallback", st.Settings.String("EMPTY", "fallback"), "blank is unset")
	require.Equal(t, devstack.TargetEmulators, st.Target)

	var b bytes.Buffer
	st.Banner(&b)
	out := b.String()
	require.Contains(t, out, "Event platform running at "+st.URL())
	require.Contains(t, out, "POST "+st.URL()+"/webhook/stripe")
	require.Contains(t, out, "whsec_…1234 (from STRIPE_WEBHOOK_SECRET)", "a developer's own secret is masked")
	require.NotContains(t, out, "whsec_from_the_environment_1234")
	require.Contains(t, out, "Bearer dev-admin-key", "the local default is shown")
	require.Contains(t, out, "go run ./cmd/evp stripe send invoice.paid --url "+st.URL())
	require.Contains(t, out, st.URL()+devstack.SinkPath)
	for _, fn := range []string{"ingest", "webhook-stripe", "admin-api"} {
		require.Contains(t, st.FunctionNames(), fn)
	}
}
