package devstack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
)

func startPurgeStack(t *testing.T, env map[string]string) (*devstack.Stack, *lambda.Client) {
	t.Helper()
	top := topology.Default().Clone()
	for i := range top.Topics {
		if top.Topics[i].Name == topology.CachePurge {
			top.Topics[i].BatchWindow = 0 // not 5 s in a test
		}
	}
	st, err := devstack.Start(context.Background(), devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Topology: top, Env: envconf.FromMap(env),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st, awslocal.NewLambdaClient(awslocal.NewConfig(), st.URL())
}

func invokeJSON(t *testing.T, c *lambda.Client, fn, payload string) map[string]any {
	t.Helper()
	out, err := c.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: []byte(payload)})
	require.NoError(t, err)
	require.Nil(t, out.FunctionError, "%s", out.Payload)
	var m map[string]any
	require.NoError(t, json.Unmarshal(out.Payload, &m))
	return m
}

type recorded struct {
	Purges  []cachepurge.Recorded    `json:"purges"`
	Failing *cachepurge.LocalFailure `json:"failing"`
}

func purges(t *testing.T, st *devstack.Stack) recorded {
	t.Helper()
	resp, err := http.Get(st.URL() + devstack.PurgesPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var r recorded
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	return r
}

// Local mode end to end: a CMS content.published event through ingest ends
// as a completed job with its purge recorded; purge-api's 250 tags are
// recorded as 100, 100, 50; the local API can be told to fail (retried
// after its Retry-After) and recovers; DELETE clears the record.
func TestPurgeLocalModeThroughTheStack(t *testing.T) {
	t.Parallel()
	st, client := startPurgeStack(t, nil)
	require.NotNil(t, st.Purges)

	raw, err := os.ReadFile("../../../events/ingest/valid/cms-content-published.json")
	require.NoError(t, err)
	res := invokeJSON(t, client, "ingest", string(raw))
	require.Equal(t, "enqueued", res["status"], res)
	require.Eventually(t, func() bool { return len(purges(t, st).Purges) == 1 }, 20*time.Second, 50*time.Millisecond)
	p := purges(t, st).Purges[0]
	require.Equal(t, "clk-construction", p.TenantID)
	require.Equal(t, devstack.LocalZone, p.Zone)
	require.Equal(t, []string{"tenant:clk-construction:page:/projects", "tenant:clk-construction:projects:commercial-reno"}, p.Tags)
	jobID := cachepurge.JobIDForEvent("clk-construction", "cms-pub-2026-11-30-0001")
	require.Equal(t, []string{jobID}, p.JobIDs)
	require.Eventually(t, func() bool {
		return invokeJSON(t, client, "purge-api", `{"op":"getPurgeStatus","jobId":"`+jobID+`"}`)["status"] == "completed"
	}, 10*time.Second, 50*time.Millisecond)

	// purge-api: 250 tags → 100, 100, 50.
	req, err := http.NewRequest(http.MethodDelete, st.URL()+devstack.PurgesPath, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Empty(t, purges(t, st).Purges)
	var tags []string
	for i := range 250 {
		tags = append(tags, fmt.Sprintf(`"tenant:acme:page:/p%03d"`, i))
	}
	queued := invokeJSON(t, client, "purge-api", `{"op":"purgeTags","tenantId":"acme","tags":[`+strings.Join(tags, ",")+`]}`)
	require.Equal(t, true, queued["ok"], queued)
	require.Eventually(t, func() bool { return len(purges(t, st).Purges) == 3 }, 20*time.Second, 50*time.Millisecond)
	var sizes []int
	for _, p := range purges(t, st).Purges {
		sizes = append(sizes, len(p.Tags))
		require.Equal(t, []string{queued["jobId"].(string)}, p.JobIDs)
	}
	require.Equal(t, []int{100, 100, 50}, sizes)

	// Told to fail with 429 / Retry-After 2: the job waits, then goes
	// through once the API recovers.
	resp, err = http.Post(st.URL()+devstack.PurgesPath+"/fail?status=429&retryAfter=2", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, &cachepurge.LocalFailure{Status: 429, RetryAfter: 2}, purges(t, st).Failing)
	retried := invokeJSON(t, client, "purge-api", `{"op":"purgeTags","tenantId":"acme","tags":["tenant:acme"]}`)
	id := retried["jobId"].(string)
	require.Eventually(t, func() bool {
		j := invokeJSON(t, client, "purge-api", `{"op":"getPurgeStatus","jobId":"`+id+`"}`)
		return j["retryCount"] == float64(1) && j["status"] == "processing"
	}, 10*time.Second, 50*time.Millisecond, "the 429 is retried")
	req, _ = http.NewRequest(http.MethodDelete, st.URL()+devstack.PurgesPath+"/fail", nil)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Eventually(t, func() bool {
		return invokeJSON(t, client, "purge-api", `{"op":"getPurgeStatus","jobId":"`+id+`"}`)["status"] == "completed"
	}, 15*time.Second, 100*time.Millisecond, "delivered once the API recovers")
}

// With a Cloudflare token there is no local mode and no inspection
// surface.
func TestPurgesEndpointIsGoneWithAToken(t *testing.T) {
	t.Parallel()
	st, _ := startPurgeStack(t, map[string]string{"CLOUDFLARE_API_TOKEN": "a-real-looking-token"})
	require.Nil(t, st.Purges)
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, err := http.NewRequest(m, st.URL()+devstack.PurgesPath, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode, m)
	}
	resp, err := http.Post(st.URL()+devstack.PurgesPath+"/fail?status=429", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}
