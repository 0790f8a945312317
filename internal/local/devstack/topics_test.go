package devstack_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/devapi"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/local/devstack/devstacktest"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Operators pause and resume a topic: GET /admin/topics lists every
// topic's health; a pause disables the topic's event source mapping at
// once (its events wait on the queue, undelivered, not dead-lettered),
// only a paused topic resumes, and a resume delivers the backlog. The
// console shows the state and does the same through CSRF-protected forms.
func TestOperatorsPauseAndResumeATopic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	require.Equal(t, devapi.HealthFunction, devstack.FunctionHealth, "evp tells the function the stack runs")
	st, err := devstack.Start(ctx, devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Topology: fastBreaker(),
		Env: envconf.FromMap(map[string]string{"HEALTH_PERIOD": "1s"}),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	client := awslocal.NewLambdaClient(awslocal.NewConfig(), st.URL())

	code, body := devstacktest.AdminDo(t, st, http.MethodGet, "/admin/topics", nil)
	require.Equal(t, http.StatusOK, code)
	topics := body["topics"].([]any)
	require.Len(t, topics, len(st.Topology.Topics))
	for _, v := range topics {
		require.Equal(t, "closed", v.(map[string]any)["health"].(map[string]any)["state"])
	}

	code, body = devstacktest.AdminDo(t, st, http.MethodPost, "/admin/topics/"+topology.CRM+"/pause", map[string]string{"reason": "subscriber migration", "actor": "ops"})
	require.Equal(t, http.StatusOK, code, "%v", body)
	require.Equal(t, "paused", body["health"].(map[string]any)["state"])
	require.Equal(t, "paused by ops: subscriber migration", body["health"].(map[string]any)["reason"])
	require.Eventually(t, func() bool { s, _ := mappingState(t, client, st); return s == "Disabled" }, 10*time.Second, 50*time.Millisecond)
	time.Sleep(1500 * time.Millisecond) // a receive begun before ends (Lambda's Disabling)
	publishInquiries(t, client, "inq_pause", 3)
	require.Eventually(t, func() bool { return len(st.Sink.Deliveries(topology.Notifications)) == 3 }, 30*time.Second, 50*time.Millisecond)
	time.Sleep(2 * time.Second)
	require.Empty(t, st.Sink.Deliveries(topology.CRM), "a paused topic delivers nothing")
	visible, inflight := dlqDepth(t, st, st.Resources.Queues[topology.CRM].DLQURL)
	require.Zero(t, visible+inflight)

	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/admin/topics/nope.events/pause", http.StatusNotFound, "topic_not_found"},
		{"/admin/topics/" + topology.Billing + "/resume", http.StatusConflict, "not_paused"},
	} {
		code, body = devstacktest.AdminDo(t, st, http.MethodPost, tc.path, nil)
		require.Equal(t, tc.code, code, tc.path)
		require.Equal(t, tc.want, body["error"].(map[string]any)["code"], tc.path)
	}

	// The console: the state, and resume through its form (a form without
	// the CSRF token is refused).
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.PostForm(st.URL()+"/console/login", url.Values{"key": {st.AdminKey()}})
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(page), `<span class="badge paused"`)
	require.Contains(t, string(page), `name="resume" value="`+topology.CRM+`"`, "a button in the topics' one form")
	resp, err = browser.PostForm(st.URL()+"/console/topics", url.Values{"resume": {topology.CRM}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token")
	token := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(string(page))
	require.NotNil(t, token)
	resp, err = browser.PostForm(st.URL()+"/console/topics", url.Values{"csrf": {token[1]}, "resume": {topology.CRM}})
	require.NoError(t, err)
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "back on the overview")
	require.True(t, strings.Contains(string(page), topology.CRM+" resumed"), "%s", page)

	require.Eventually(t, func() bool { return len(st.Sink.Deliveries(topology.CRM)) == 3 }, 30*time.Second, 50*time.Millisecond, "the backlog is delivered")
	code, body = devstacktest.AdminDo(t, st, http.MethodGet, "/admin/topics", nil)
	require.Equal(t, http.StatusOK, code)
	for _, v := range body["topics"].([]any) {
		if v.(map[string]any)["topic"] == topology.CRM {
			require.Equal(t, string(subscriberhealth.Closed), v.(map[string]any)["health"].(map[string]any)["state"])
			require.Equal(t, "resumed by console", v.(map[string]any)["health"].(map[string]any)["reason"])
		}
	}
}
