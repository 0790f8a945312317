package afterward_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/afterward"
)

type key struct{}

func TestGoWithoutTasksRunsTheWorkAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.WithValue(context.Background(), key{}, "v")
	var ran bool
	afterward.Go(ctx, func(ctx context.Context) {
		ran = true
		require.True(t, afterward.After(ctx))
		require.Equal(t, "v", ctx.Value(key{}))
	})
	require.True(t, ran, "no invocation to wait for it: the work is done before Go returns")
	require.False(t, afterward.After(ctx))
}

func TestGoWithTasksOutlivesTheHandlersContext(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(time.Minute)
	parent, cancel := context.WithDeadline(context.Background(), deadline)
	tasks := afterward.New()
	release := make(chan struct{})
	var errAfter error
	var gotDeadline time.Time
	afterward.Go(afterward.With(parent, tasks), func(ctx context.Context) {
		<-release
		errAfter = ctx.Err()
		gotDeadline, _ = ctx.Deadline()
	})
	cancel() // the Lambda Go runtime cancels the handler's context when it returns
	close(release)
	tasks.Wait()
	require.NoError(t, errAfter, "the work's context is not the handler's cancellation")
	require.Equal(t, deadline, gotDeadline, "but it keeps the invocation's deadline")
}

// fakeExtensionsAPI is the part of the Lambda Runtime API an internal
// extension talks to: it hands out one INVOKE per invocation and notes
// when the extension asks again (the invocation's work is done).
type fakeExtensionsAPI struct {
	invoke  chan struct{}
	asked   chan time.Time
	name    atomic.Value
	nextNum atomic.Int32
}

func newFakeExtensionsAPI(t *testing.T) (*fakeExtensionsAPI, string) {
	f := &fakeExtensionsAPI{invoke: make(chan struct{}, 8), asked: make(chan time.Time, 8)}
	closing := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/2020-01-01/extension/register":
			f.name.Store(r.Header.Get("Lambda-Extension-Name"))
			w.Header().Set("Lambda-Extension-Identifier", "ext-1")
			_, _ = w.Write([]byte(`{"functionName":"f","functionVersion":"$LATEST","handler":"bootstrap"}`))
		case "/2020-01-01/extension/event/next":
			if r.Header.Get("Lambda-Extension-Identifier") != "ext-1" {
				w.WriteHeader(http.StatusForbidden)
				return
			}
			if f.nextNum.Add(1) > 1 {
				f.asked <- time.Now()
			}
			select {
			case <-f.invoke:
				_ = json.NewEncoder(w).Encode(map[string]string{"eventType": "INVOKE", "requestId": "r"})
			case <-r.Context().Done():
			case <-closing:
			}
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(func() { close(closing); srv.CloseClientConnections(); srv.Close() })
	return f, strings.TrimPrefix(srv.URL, "http://")
}

func TestHandlerAnswersBeforeTheWorkAndTheExtensionWaitsForIt(t *testing.T) {
	t.Parallel()
	api, addr := newFakeExtensionsAPI(t)
	ext, err := afterward.Register(addr)
	require.NoError(t, err)
	require.Equal(t, afterward.ExtensionName, api.name.Load())

	release := make(chan struct{})
	var done atomic.Bool
	h := afterward.Handler(lambda.NewHandler(func(ctx context.Context) (string, error) {
		afterward.Go(ctx, func(context.Context) {
			<-release
			done.Store(true)
		})
		return "answered", nil
	}), ext)

	api.invoke <- struct{}{} // Lambda sends the extension its INVOKE as the invocation starts
	out, err := h.Invoke(context.Background(), []byte(`{}`))
	require.NoError(t, err)
	require.JSONEq(t, `"answered"`, string(out), "the answer does not wait for the work")
	require.False(t, done.Load())
	select {
	case <-api.asked:
		t.Fatal("the extension asked for the next event before the work was done: the environment could freeze it")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case <-api.asked:
		require.True(t, done.Load())
	case <-time.After(5 * time.Second):
		t.Fatal("the extension never asked for the next event after the work")
	}
}

func TestHandlerWithoutAnExtensionFinishesTheWorkBeforeAnswering(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var order []string
	h := afterward.Handler(lambda.NewHandler(func(ctx context.Context) (string, error) {
		afterward.Go(ctx, func(context.Context) {
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			order = append(order, "work")
			mu.Unlock()
		})
		return "answered", nil
	}), nil)
	_, err := h.Invoke(context.Background(), []byte(`{}`))
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"work"}, order)
}

func TestRegisterRefusesWithoutARuntimeAPI(t *testing.T) {
	t.Parallel()
	_, err := afterward.Register("")
	require.Error(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer srv.Close()
	_, err = afterward.Register(strings.TrimPrefix(srv.URL, "http://"))
	require.ErrorContains(t, err, "403")
}
