package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// evp github|shopify|standard send signs a sample the provider's way with
// the local secret: the local stack's function accepts it, the same sample
// again is the same delivery (a duplicate), --new-id a new event, and a
// wrong secret is the function's 401 and a failed command.
func TestProviderSend(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	ctx := context.Background()
	for provider, sample := range map[string]string{"github": "issues.opened", "shopify": "orders.create", "standard": "contact.created"} {
		out, err := run(t, ctx, "", provider, "send", sample, "--url", st.URL())
		require.NoError(t, err, out)
		require.True(t, strings.HasPrefix(out, "HTTP 200 OK\n"), "%s: %s", provider, out)
		require.Equal(t, "enqueued", answerBody(t, out)["status"], provider)
		first := answerBody(t, out)["eventId"]

		out, err = run(t, ctx, "", provider, "send", "../../events/"+provider+"/"+sample+".json", "--url", st.URL())
		require.NoError(t, err, out)
		require.Equal(t, "duplicate_acknowledged", answerBody(t, out)["status"], "%s: the same sample is the same delivery", provider)

		out, err = run(t, ctx, "", provider, "send", sample, "--new-id", "--url", st.URL())
		require.NoError(t, err, out)
		require.Equal(t, "enqueued", answerBody(t, out)["status"], provider)
		require.NotEqual(t, first, answerBody(t, out)["eventId"], provider)

		secret := "wrong-secret"
		if provider == "standard" {
			secret = "whsec_d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldC13cm9uZyE="
		}
		out, err = run(t, ctx, "", provider, "send", sample, "--new-id", "--secret", secret, "--url", st.URL())
		require.ErrorIs(t, err, errSilent, out)
		require.True(t, strings.HasPrefix(out, "HTTP 401"), "%s: %s", provider, out)
	}
	out, err := run(t, ctx, "", "github", "send", "ping", "--url", st.URL())
	require.NoError(t, err, out)
	require.Equal(t, "acknowledged", answerBody(t, out)["status"], "GitHub's ping carries no event")
}
