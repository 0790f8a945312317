package lambdainvoke_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/lambdainvoke"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
)

type bundle struct {
	fns    *lambdalocal.Functions
	faults *awslocal.Faults
	calls  *awslocal.Calls
	url    string
}

// setup serves a Lambda Invoke endpoint and returns clients built like
// production ones (real SDK client, default retryer) with fault injection
// and call counting attached as SDK middleware.
func setup(t *testing.T) *bundle {
	t.Helper()
	fns := lambdalocal.NewFunctions()
	srv := httptest.NewServer(fns)
	t.Cleanup(func() {
		fns.Wait()
		srv.Close()
	})
	return &bundle{fns: fns, faults: awslocal.NewFaults(), calls: awslocal.NewCalls(), url: srv.URL}
}

func (b *bundle) ingest(function string, timeout time.Duration) *lambdainvoke.Ingest {
	cfg := awslocal.NewConfig()
	cfg.APIOptions = append(slices.Clone(cfg.APIOptions), b.calls.APIOption, b.faults.APIOption)
	return &lambdainvoke.Ingest{Client: awslocal.NewLambdaClient(cfg, b.url), Function: function, Timeout: timeout}
}

func invokeErr(t *testing.T, err error) *lambdainvoke.Error {
	t.Helper()
	var ie *lambdainvoke.Error
	require.True(t, errors.As(err, &ie), "got %T %v", err, err)
	return ie
}

func TestPublishReturnsTheResult(t *testing.T) {
	t.Parallel()
	b := setup(t)
	payload := []byte(`{"id":"evt_1", "payload":{"a" : "<&>"}}`)
	b.fns.Register("ingest", func(_ context.Context, raw json.RawMessage) (envelope.Result, error) {
		if string(raw) != string(payload) {
			return envelope.Result{}, errors.New("payload altered in transit: " + string(raw))
		}
		return envelope.Result{Status: envelope.StatusEnqueued, EventID: "evt_1", Topics: []string{"billing.events"}, PendingTopics: []string{}}, nil
	})
	for _, fn := range []string{"ingest", awslocal.FunctionARN("ingest")} {
		res, err := b.ingest(fn, 0).Publish(context.Background(), payload)
		require.NoError(t, err)
		require.Equal(t, envelope.StatusEnqueued, res.Status)
		require.Equal(t, []string{"billing.events"}, res.Topics)
	}
	require.Equal(t, 2, b.calls.Count("Lambda", "Invoke"))
}

func TestPublishClassifiesFailures(t *testing.T) {
	t.Parallel()
	// stuck blocks until the subtest ends, like a handler whose dependency
	// hangs.
	stuck := func(release <-chan struct{}) any {
		return func(context.Context, json.RawMessage) (envelope.Result, error) {
			<-release
			return envelope.Result{}, nil
		}
	}
	cases := []struct {
		name        string
		handler     any
		stuck       bool
		fnTimeout   time.Duration
		callTimeout time.Duration
		fault       *awslocal.Fault
		function    string
		kind        lambdainvoke.Kind
		unavailable bool
	}{
		{name: "function error", handler: func(context.Context, json.RawMessage) (envelope.Result, error) {
			return envelope.Result{}, errors.New("ingest: commit: ProvisionedThroughputExceeded")
		}, kind: lambdainvoke.KindFunction},
		{name: "function panics", handler: func(context.Context, json.RawMessage) (envelope.Result, error) {
			panic("boom")
		}, kind: lambdainvoke.KindFunction},
		{name: "function times out", stuck: true, fnTimeout: 50 * time.Millisecond, kind: lambdainvoke.KindTimeout, unavailable: true},
		{name: "call deadline", stuck: true, callTimeout: 100 * time.Millisecond, kind: lambdainvoke.KindTimeout, unavailable: true},
		{name: "throttled", fault: &awslocal.Fault{Service: "Lambda", Operation: "Invoke", Err: awslocal.Throttled()}, kind: lambdainvoke.KindThrottled, unavailable: true},
		{name: "service error", fault: &awslocal.Fault{Service: "Lambda", Operation: "Invoke"}, kind: lambdainvoke.KindUnavailable, unavailable: true},
		{name: "function not found", function: "missing", kind: lambdainvoke.KindInvoke},
		{name: "not a result", handler: func(context.Context, json.RawMessage) (any, error) {
			return []int{1}, nil
		}, kind: lambdainvoke.KindBadResult},
		{name: "unknown status", handler: func(context.Context, json.RawMessage) (any, error) {
			return map[string]string{"status": "maybe"}, nil
		}, kind: lambdainvoke.KindBadResult},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			handler := tc.handler
			if tc.stuck {
				release := make(chan struct{})
				t.Cleanup(func() { close(release) }) // before the server closes
				handler = stuck(release)
			}
			if handler == nil {
				handler = func(context.Context, json.RawMessage) (envelope.Result, error) {
					return envelope.Result{Status: envelope.StatusEnqueued}, nil
				}
			}
			var opts []lambdalocal.FunctionOption
			if tc.fnTimeout > 0 {
				opts = append(opts, lambdalocal.FunctionTimeout(tc.fnTimeout))
			}
			b.fns.Register("ingest", handler, opts...)
			if tc.fault != nil {
				b.faults.Add(*tc.fault)
			}
			fn := "ingest"
			if tc.function != "" {
				fn = tc.function
			}
			_, err := b.ingest(fn, tc.callTimeout).Publish(context.Background(), []byte(`{"id":"evt_1"}`))
			ie := invokeErr(t, err)
			require.Equal(t, tc.kind, ie.Kind, ie.Error())
			require.Equal(t, tc.unavailable, ie.Unavailable())
			require.Equal(t, fn, ie.Function)
			require.Contains(t, ie.Error(), string(tc.kind))
		})
	}
}

// A batch goes out as one JSON array of the envelopes as given and comes
// back as one result each; an answer that does not fit the batch (another
// count, not a batch reply, an unknown status) is a bad result, never a
// partial success.
func TestPublishBatchSendsOneArrayAndReturnsAResultEach(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fns.Register("ingest", func(_ context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var in []json.RawMessage
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, err
		}
		if len(in) != 3 || string(in[1]) != `{"id":"evt_b", "x" : 1}` {
			return nil, errors.New("batch altered in transit: " + string(raw))
		}
		return json.RawMessage(`{"results":[{"status":"enqueued","eventId":"evt_a","topics":["t"],"pendingTopics":[]},` +
			`{"status":"","eventId":"evt_b","topics":null,"pendingTopics":null,"retry":"commit failed"},` +
			`{"status":"rejected","eventId":"","topics":[],"pendingTopics":[],"error":{"code":"missing_field","message":"m"}}]}`), nil
	})
	got, err := b.ingest("ingest", time.Second).PublishBatch(context.Background(), [][]byte{[]byte(`{"id":"evt_a"}`), []byte(`{"id":"evt_b", "x" : 1}`), []byte(`{}`)})
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, envelope.StatusEnqueued, got[0].Status)
	require.Equal(t, "commit failed", got[1].Retry)
	require.Equal(t, "evt_b", got[1].EventID)
	require.Equal(t, envelope.CodeMissingField, got[2].Error.Code)
	require.Equal(t, 1, b.calls.Count("Lambda", "Invoke"))

	for name, answer := range map[string]string{
		"fewer results":  `{"results":[{"status":"enqueued","topics":[],"pendingTopics":[]}]}`,
		"not a batch":    `{"status":"enqueued","topics":[],"pendingTopics":[]}`,
		"unknown status": `{"results":[{"status":"sent"},{"status":"sent"}]}`,
	} {
		fn := "ingest-" + strings.ReplaceAll(name, " ", "-")
		b.fns.Register(fn, func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(answer), nil })
		_, err := b.ingest(fn, time.Second).PublishBatch(context.Background(), [][]byte{[]byte(`{}`), []byte(`{}`)})
		require.Equal(t, lambdainvoke.KindBadResult, invokeErr(t, err).Kind, name)
	}

	b.fns.Register("ingest-refusing", func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"status":"rejected","topics":[],"pendingTopics":[],"error":{"code":"invalid_batch","message":"a batch is a JSON array of envelopes"}}`), nil
	})
	_, err = b.ingest("ingest-refusing", time.Second).PublishBatch(context.Background(), [][]byte{[]byte(`{}`)})
	ie := invokeErr(t, err)
	require.Equal(t, lambdainvoke.KindBadResult, ie.Kind)
	require.Equal(t, "invalid_batch", ie.Type, "the rejection's code")
}
