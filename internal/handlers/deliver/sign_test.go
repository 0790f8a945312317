package deliver_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/handlers/deliver"
)

// The Standard Webhooks specification's own test vector.
func TestSignatureMatchesTheStandardWebhooksVector(t *testing.T) {
	t.Parallel()
	key, err := deliver.Key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NoError(t, err)
	sig := deliver.Signature(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	require.Equal(t, "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", sig)
}

func TestSignCoversEveryActiveSecret(t *testing.T) {
	t.Parallel()
	oldS, newS := whsecOf("old-secret-0123456789"), whsecOf("new-secret-0123456789")
	ts := time.Unix(1_800_000_000, 0)
	h, err := deliver.Sign([]string{newS, oldS}, "evt_1", ts, []byte(`{}`))
	require.NoError(t, err)
	header := headers("evt_1", ts, h)
	// A subscriber that still has the old secret verifies, so does one
	// that has the new one.
	require.NoError(t, deliver.Verify(oldS, header, []byte(`{}`), deliver.DefaultTolerance, ts))
	require.NoError(t, deliver.Verify(newS, header, []byte(`{}`), deliver.DefaultTolerance, ts))

	_, err = deliver.Sign(nil, "evt_1", ts, nil)
	require.Error(t, err)
	_, err = deliver.Sign([]string{"whsec_not base64!"}, "evt_1", ts, nil)
	require.ErrorContains(t, err, "secret #1")
	require.NotContains(t, err.Error(), "not base64!", "errors never quote a secret")
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	s := whsecOf("subscriber-secret-0123")
	ts := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"evt_1"}`)
	sig, err := deliver.Sign([]string{s}, "evt_1", ts, body)
	require.NoError(t, err)
	cases := map[string]struct {
		h    http.Header
		body []byte
		now  time.Time
		want error
	}{
		"valid":             {headers("evt_1", ts, sig), body, ts, nil},
		"tampered body":     {headers("evt_1", ts, sig), []byte(`{"id":"evt_2"}`), ts, deliver.ErrSignature},
		"other id":          {headers("evt_2", ts, sig), body, ts, deliver.ErrSignature},
		"too old":           {headers("evt_1", ts, sig), body, ts.Add(6 * time.Minute), deliver.ErrTimestamp},
		"too far in future": {headers("evt_1", ts, sig), body, ts.Add(-6 * time.Minute), deliver.ErrTimestamp},
		"no signature":      {headers("evt_1", ts, ""), body, ts, deliver.ErrMissingHeaders},
		"unknown version":   {headers("evt_1", ts, "v2,"+sig[3:]), body, ts, deliver.ErrSignature},
	}
	for name, tc := range cases {
		err := deliver.Verify(s, tc.h, tc.body, deliver.DefaultTolerance, tc.now)
		if tc.want == nil {
			require.NoError(t, err, name)
		} else {
			require.ErrorIs(t, err, tc.want, name)
		}
	}
}

func TestValidateURL(t *testing.T) {
	t.Parallel()
	ok := []string{"https://hooks.example.com/platform", "http://127.0.0.1:3000/__deliveries/billing.events", "http://localhost:8080/x", "http://[::1]:9/x"}
	for _, u := range ok {
		require.NoError(t, deliver.ValidateURL(u), u)
	}
	bad := []string{"", "hooks.example.com/x", "http://hooks.example.com/x", "ftp://hooks.example.com/x", "http://10.0.0.1/x"}
	for _, u := range bad {
		require.Error(t, deliver.ValidateURL(u), u)
	}
	err := deliver.ValidateURL("http://user:pass@hooks.example.com/x?token=abc")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "pass")
	require.NotContains(t, err.Error(), "token=abc")
}

// whsecOf makes a whsec_ secret from a raw key.
func whsecOf(raw string) string {
	return deliver.SecretPrefix + base64.StdEncoding.EncodeToString([]byte(raw))
}

func headers(id string, ts time.Time, sig string) http.Header {
	h := http.Header{}
	h.Set(deliver.HeaderID, id)
	h.Set(deliver.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	if sig != "" {
		h.Set(deliver.HeaderSignature, sig)
	}
	return h
}

// verifyIndependently checks a delivery with nothing but the documented
// scheme (docs/consumers.md), not this package's code: strip whsec_,
// base64-decode the key, HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>",
// base64, compare with a "v1," entry of webhook-signature.
func verifyIndependently(t *testing.T, whsec string, h http.Header, body []byte) bool {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(whsec[len("whsec_"):])
	require.NoError(t, err)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, s := range splitSpaces(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}

func splitSpaces(s string) []string {
	var out []string
	start := -1
	for i, r := range s + " " {
		if r == ' ' {
			if start >= 0 {
				out = append(out, s[start:i])
			}
			start = -1
		} else if start < 0 {
			start = i
		}
	}
	return out
}
