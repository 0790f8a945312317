package devstack_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/handlers/deliver"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
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

// The sink checks each delivery's signature against the topic's secrets the
// way a subscriber would and records the outcome; it answers the same
// either way.
func TestSinkRecordsWhetherTheSignatureVerifies(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	topic := "billing.events"
	url := st.URL() + devstack.SinkPath + "/" + topic
	body := `{"id":"evt_sig"}`
	now := time.Now()
	signed := func(secrets []string, ts time.Time) map[string]string {
		sig, err := deliver.Sign(secrets, "evt_sig", ts, []byte(body))
		require.NoError(t, err)
		return map[string]string{"webhook-id": "evt_sig", "webhook-timestamp": strconv.FormatInt(ts.Unix(), 10), "webhook-signature": sig}
	}
	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte("another-subscriber-key"))
	cases := []struct {
		name string
		hdr  map[string]string
		want string
	}{
		{"signed with the topic's secret", signed(st.SubscriberSecrets(topic), now), devstack.SignatureVerified},
		{"one of several signatures matches", signed([]string{other, st.SubscriberSecrets(topic)[0]}, now), devstack.SignatureVerified},
		{"unsigned", nil, devstack.SignatureMissing},
		{"another secret", signed([]string{other}, now), devstack.SignatureMismatch},
		{"ten minutes old", signed(st.SubscriberSecrets(topic), now.Add(-10*time.Minute)), devstack.SignatureStale},
	}
	for _, c := range cases {
		code, _, _ := do(t, http.MethodPost, url, body, c.hdr)
		require.Equal(t, http.StatusOK, code, c.name)
	}
	got := st.Sink.Deliveries(topic)
	require.Len(t, got, len(cases))
	for i, c := range cases {
		require.Equal(t, c.want, got[i].Signature, c.name)
	}
	require.Equal(t, devstack.SignatureVerified, sinkGet(t, url[:strings.LastIndex(url, "/")]+"?topic="+topic).Deliveries[0].Signature, "in the JSON view too")
}

// A slow subscriber: the sink answers a topic's deliveries after its
// latency (checked as a lower bound, which load cannot break).
func TestSinkAnswersAfterItsLatency(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	st.Sink.Latency = func(topic string) time.Duration {
		if topic == "crm.sync" {
			return 300 * time.Millisecond
		}
		return 0
	}
	start := time.Now()
	code, _, _ := do(t, http.MethodPost, st.URL()+devstack.SinkPath+"/crm.sync", `{"id":"inq_slow"}`, nil)
	require.Equal(t, http.StatusOK, code)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "answered after the latency")
	require.Len(t, st.Sink.Deliveries("crm.sync"), 1)
}
