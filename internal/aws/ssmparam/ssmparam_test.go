package ssmparam_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/ssmparam"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
)

func accounts(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("acct_1PzB7sLk%08d", i)] = fmt.Sprintf("tenant-%04d", i%250)
	}
	return m
}

func TestChunk(t *testing.T) {
	t.Parallel()
	m := accounts(1000)
	chunks, err := ssmparam.Chunk(m, ssmparam.MaxValueBytes)
	require.NoError(t, err)
	require.Greater(t, len(chunks), 1)
	seen := map[string]bool{}
	for _, c := range chunks {
		require.LessOrEqual(t, len(c), ssmparam.MaxValueBytes)
		require.True(t, strings.HasPrefix(c, "{") && strings.HasSuffix(c, "}"))
		for _, k := range strings.Split(strings.Trim(c, "{}"), ",") {
			seen[strings.Split(k, ":")[0]] = true
		}
	}
	require.Len(t, seen, 1000, "every entry in exactly one chunk")
	again, err := ssmparam.Chunk(m, ssmparam.MaxValueBytes)
	require.NoError(t, err)
	require.Equal(t, chunks, again, "the same map gives the same parameters")

	empty, err := ssmparam.Chunk(nil, ssmparam.MaxValueBytes)
	require.NoError(t, err)
	require.Empty(t, empty)
	_, err = ssmparam.Chunk(map[string]string{"k": strings.Repeat("v", 100)}, 50)
	require.ErrorContains(t, err, `entry "k"`)

	require.Equal(t, ssmparam.Version(m), ssmparam.Version(accounts(1000)))
	require.NotEqual(t, ssmparam.Version(m), ssmparam.Version(accounts(999)))
}

func setup(t *testing.T) *ssm.Client {
	t.Helper()
	srv := httptest.NewServer(awslocal.NewParamsHandler())
	t.Cleanup(srv.Close)
	return awslocal.NewSSMClient(awslocal.NewConfig(), srv.URL)
}

func put(t *testing.T, c *ssm.Client, path string, chunks []string) {
	t.Helper()
	for i, v := range chunks {
		_, err := c.PutParameter(context.Background(), &ssm.PutParameterInput{Name: aws.String(fmt.Sprintf("%s/%03d", path, i)), Value: aws.String(v)})
		require.NoError(t, err)
	}
}

// 1,500 Connect accounts written as the CDK app writes them and read back
// through the real SDK client, every page of the path.
func TestLoadMapReadsEveryChunk(t *testing.T) {
	t.Parallel()
	c := setup(t)
	m := accounts(1500)
	chunks, err := ssmparam.Chunk(m, ssmparam.MaxValueBytes)
	require.NoError(t, err)
	require.Greater(t, len(chunks), 10, "more than one GetParametersByPath page")
	put(t, c, "/evp/big/config/stripe-account-tenants", chunks)
	got, err := ssmparam.LoadMap(context.Background(), c, "/evp/big/config/stripe-account-tenants")
	require.NoError(t, err)
	require.Equal(t, m, got)

	none, err := ssmparam.LoadMap(context.Background(), c, "/evp/big/config/nothing")
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestLoadMapRefuses(t *testing.T) {
	t.Parallel()
	c := setup(t)
	put(t, c, "/evp/x/bad", []string{`["not","an","object"]`})
	_, err := ssmparam.LoadMap(context.Background(), c, "/evp/x/bad")
	require.ErrorContains(t, err, "/evp/x/bad/000")
	put(t, c, "/evp/x/dup", []string{`{"acct_1":"acme"}`, `{"acct_1":"globex"}`})
	_, err = ssmparam.LoadMap(context.Background(), c, "/evp/x/dup")
	require.ErrorContains(t, err, `key "acct_1"`)
}
