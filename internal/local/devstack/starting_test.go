package devstack_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

// answer is one request's status, Retry-After and body.
type answer struct {
	status     int
	retryAfter string
	body       string
}

func fetchAnswer(method, url, body string) (answer, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(b)}, err
}

func ask(t *testing.T, method, url, body string) answer {
	t.Helper()
	a, err := fetchAnswer(method, url, body)
	require.NoError(t, err)
	return a
}

// requireStarting asserts the stack's answer while it starts: 503,
// Retry-After, and the platform's refusal with the code "starting".
func requireStarting(t *testing.T, a answer, what string) {
	t.Helper()
	require.Equal(t, http.StatusServiceUnavailable, a.status, "%s: %s", what, a.body)
	require.Equal(t, devstack.StartingRetryAfter, a.retryAfter, what)
	var refusal struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.body), &refusal), what)
	require.Equal(t, "starting", refusal.Error.Code, what)
	require.NotEmpty(t, refusal.Error.Message, what)
}

// The port answers from the moment it opens, but a webhook, the admin API
// or the console posted before the stack is ready is answered 503
// "starting" with Retry-After, never a 404 (the routes are mounted as the
// functions register: a script that posted once the port opened got 404
// for about a second). /healthz keeps its answer: 503 {"status":"starting"}
// until ready, then 200.
func TestRequestsBeforeReadyAreStartingNotNotFound(t *testing.T) {
	t.Parallel()
	listening, release := make(chan string, 1), make(chan struct{})
	started := make(chan error, 1)
	var st *devstack.Stack
	go func() {
		var err error
		st, err = devstack.Start(context.Background(), devstack.Options{Addr: "127.0.0.1:0", Log: logging.Discard(), Env: envconf.FromMap(nil),
			Listening: func(url string) { listening <- url; <-release }})
		started <- err
	}()
	var url string
	select {
	case url = <-listening:
	case err := <-started:
		t.Fatalf("the stack did not start: %v", err)
	}

	webhook := url + "/webhook/stripe"
	requireStarting(t, ask(t, http.MethodPost, webhook, `{"id":"evt_1","type":"invoice.paid"}`), "a webhook while held")
	requireStarting(t, ask(t, http.MethodGet, url+"/admin/health", ""), "the admin API while held")
	requireStarting(t, ask(t, http.MethodGet, url+"/console", ""), "the console while held")
	h := ask(t, http.MethodGet, url+"/healthz", "")
	require.Equal(t, http.StatusServiceUnavailable, h.status)
	require.JSONEq(t, `{"status":"starting"}`, h.body, "/healthz as before")

	// From the release until ready, a client posting as fast as it can
	// sees "starting", then the platform's own answer: never a 404.
	var (
		mu      sync.Mutex
		answers []answer
		errs    []error
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			a, err := fetchAnswer(http.MethodPost, webhook, `{"id":"evt_1","type":"invoice.paid"}`)
			mu.Lock()
			if err != nil {
				errs = append(errs, err)
			} else {
				answers = append(answers, a)
			}
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	close(release)
	require.NoError(t, <-started)
	t.Cleanup(func() { _ = st.Close() })
	a := ask(t, http.MethodPost, webhook, `{"id":"evt_1","type":"invoice.paid"}`)
	close(stop)
	wg.Wait()

	require.Empty(t, errs, "the port answers throughout")
	require.NotEmpty(t, answers)
	for i, a := range answers {
		require.NotEqual(t, http.StatusNotFound, a.status, "answer %d of %d during start-up: %s", i+1, len(answers), a.body)
		if a.status == http.StatusServiceUnavailable {
			requireStarting(t, a, "during start-up")
		}
	}
	require.Equal(t, http.StatusUnauthorized, a.status, "ready: the webhook itself refuses an unsigned delivery: %s", a.body)
	require.Contains(t, a.body, `"signature_missing"`)
	require.Equal(t, http.StatusOK, ask(t, http.MethodGet, url+"/healthz", "").status)
}
