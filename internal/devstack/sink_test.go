package devstack_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/devstack"
)

func do(t *testing.T, method, url, body string, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

type sinkState struct {
	Deliveries []devstack.Delivery        `json:"deliveries"`
	Failing    map[string]json.RawMessage `json:"failing"`
}

func sinkGet(t *testing.T, url string) sinkState {
	t.Helper()
	code, _, body := do(t, http.MethodGet, url, "", nil)
	require.Equal(t, http.StatusOK, code)
	var s sinkState
	require.NoError(t, json.Unmarshal(body, &s))
	return s
}

func TestSinkRecordsFailsAndRecovers(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	base := st.URL() + devstack.SinkPath

	require.Equal(t, []devstack.Delivery{}, sinkGet(t, base).Deliveries, "empty, not null")

	code, _, _ := do(t, http.MethodPost, base+"/billing.events", `{"id":"evt_1","type":"stripe.invoice.paid"}`, map[string]string{"webhook-id": "msg_1", "Content-Type": "application/json"})
	require.Equal(t, http.StatusOK, code)
	code, _, _ = do(t, http.MethodPost, base+"/crm.sync", "not json", map[string]string{"webhook-id": "msg_2"})
	require.Equal(t, http.StatusOK, code)

	s := sinkGet(t, base)
	require.Len(t, s.Deliveries, 2)
	first := st.Sink.Deliveries("billing.events")
	require.Len(t, first, 1)
	require.Equal(t, "evt_1", first[0].EventID, "from the body's id")
	require.Equal(t, "msg_1", first[0].Headers["webhook-id"])
	require.JSONEq(t, `{"id":"evt_1","type":"stripe.invoice.paid"}`, string(first[0].Body))
	require.True(t, first[0].Delivered())
	crm := sinkGet(t, base+"?topic=crm.sync").Deliveries
	require.Len(t, crm, 1)
	require.Equal(t, "msg_2", crm[0].EventID, "falls back to the webhook-id header")
	require.JSONEq(t, `"not json"`, string(crm[0].Body))

	// Fail one topic with a Retry-After; the others keep working.
	code, _, _ = do(t, http.MethodPost, base+"/fail?topic=billing.events&status=503&retryAfter=7", "", nil)
	require.Equal(t, http.StatusOK, code)
	code, hdr, _ := do(t, http.MethodPost, base+"/billing.events", `{"id":"evt_2"}`, nil)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "7", hdr.Get("Retry-After"))
	code, _, _ = do(t, http.MethodPost, base+"/crm.sync", `{"id":"evt_3"}`, nil)
	require.Equal(t, http.StatusOK, code)
	s = sinkGet(t, base)
	require.Contains(t, s.Failing, "billing.events")
	got := st.Sink.Deliveries("billing.events")
	require.Len(t, got, 2, "failed attempts are recorded too")
	require.Equal(t, http.StatusServiceUnavailable, got[1].Status)
	require.False(t, got[1].Delivered())

	// Every topic, then recover one by one.
	code, _, _ = do(t, http.MethodPost, base+"/fail?status=500", "", nil)
	require.Equal(t, http.StatusOK, code)
	code, _, _ = do(t, http.MethodPost, base+"/audit.events", `{}`, nil)
	require.Equal(t, http.StatusInternalServerError, code)
	code, _, _ = do(t, http.MethodDelete, base+"/fail?topic=billing.events", "", nil)
	require.Equal(t, http.StatusNoContent, code)
	code, _, _ = do(t, http.MethodPost, base+"/billing.events", `{}`, nil)
	require.Equal(t, http.StatusInternalServerError, code, "the every-topic failure still applies")
	code, _, _ = do(t, http.MethodDelete, base+"/fail", "", nil)
	require.Equal(t, http.StatusNoContent, code)
	code, _, _ = do(t, http.MethodPost, base+"/billing.events", `{}`, nil)
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, sinkGet(t, base).Failing)

	for _, q := range []string{"status=200", "status=abc", "status=600", "retryAfter=-1"} {
		code, _, _ = do(t, http.MethodPost, base+"/fail?"+q, "", nil)
		require.Equal(t, http.StatusBadRequest, code, q)
	}

	code, _, _ = do(t, http.MethodDelete, base, "", nil)
	require.Equal(t, http.StatusNoContent, code)
	require.Empty(t, st.Sink.Deliveries(""))
}
