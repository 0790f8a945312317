package devstack_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

func TestHTTPRouteBehavesLikeAPIGateway(t *testing.T) {
	t.Parallel()
	st, err := devstack.Start(context.Background(), devstack.Options{Addr: "127.0.0.1:0", Log: logging.Discard(), Env: envconf.FromMap(nil)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	seen := make(chan events.APIGatewayV2HTTPRequest, 4)
	require.NoError(t, st.Register(devstack.Function{
		Name: "echo",
		Handler: func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			seen <- ev
			if ev.PathParameters["id"] == "boom" {
				return events.APIGatewayV2HTTPResponse{}, errors.New("boom")
			}
			return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"X-Echo": ev.PathParameters["id"]}, Body: ev.Body}, nil
		},
		Triggers: []lambdalocal.Trigger{lambdalocal.HTTPRoute{Method: "POST", Path: "/echo/{id}"}},
	}))

	resp, err := http.Post(st.URL()+"/echo/abc?x=1&x=2", "application/json", bytes.NewReader([]byte(`{"hello":"world"}`)))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 201, resp.StatusCode)
	require.Equal(t, "abc", resp.Header.Get("X-Echo"))
	require.Equal(t, `{"hello":"world"}`, string(body))
	ev := <-seen
	require.Equal(t, "2.0", ev.Version)
	require.Equal(t, "POST /echo/{id}", ev.RouteKey)
	require.Equal(t, "/echo/abc", ev.RawPath)
	require.Equal(t, "1,2", ev.QueryStringParameters["x"])
	require.Equal(t, "application/json", ev.Headers["content-type"])
	require.Equal(t, "POST", ev.RequestContext.HTTP.Method)
	require.False(t, ev.IsBase64Encoded)

	bin := []byte{0xff, 0x00, 0xfe}
	resp, err = http.Post(st.URL()+"/echo/bin", "application/octet-stream", bytes.NewReader(bin))
	require.NoError(t, err)
	resp.Body.Close()
	ev = <-seen
	require.True(t, ev.IsBase64Encoded)
	require.Equal(t, base64.StdEncoding.EncodeToString(bin), ev.Body)

	resp, err = http.Post(st.URL()+"/echo/boom", "application/json", nil)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode, "a function error is API Gateway's 500")
	require.JSONEq(t, `{"message":"Internal Server Error"}`, string(body))
	<-seen

	// A method the path has no route for is API Gateway's unmatched
	// route: 404, and the function never runs.
	resp, err = http.Get(st.URL() + "/echo/abc")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.JSONEq(t, `{"message":"Not Found"}`, string(body))
	require.Empty(t, seen)
}

// An ANY route with API Gateway's greedy {proxy+} parameter (how the admin
// API is deployed) sees every method and the rest of the path.
func TestHTTPRouteAnyMethodGreedyPath(t *testing.T) {
	t.Parallel()
	st := startStack(t)
	seen := make(chan events.APIGatewayV2HTTPRequest, 2)
	require.NoError(t, st.Register(devstack.Function{
		Name: "proxy",
		Handler: func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			seen <- ev
			return events.APIGatewayV2HTTPResponse{StatusCode: 204}, nil
		},
		Triggers: []lambdalocal.Trigger{lambdalocal.HTTPRoute{Method: "ANY", Path: "/things/{proxy+}"}},
	}))
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, err := http.NewRequest(method, st.URL()+"/things/a/b%2Fc", nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 204, resp.StatusCode)
		ev := <-seen
		require.Equal(t, "ANY /things/{proxy+}", ev.RouteKey)
		require.Equal(t, method, ev.RequestContext.HTTP.Method)
		require.Equal(t, "a/b/c", ev.PathParameters["proxy"])
		require.Equal(t, "/things/a/b%2Fc", ev.RawPath)
	}
	err := st.Register(devstack.Function{Name: "dup", Handler: func(context.Context) error { return nil },
		Triggers: []lambdalocal.Trigger{lambdalocal.HTTPRoute{Method: "ANY", Path: "/things/{proxy+}"}}})
	require.ErrorContains(t, err, "route", "a conflicting route is an error, not a panic")
}
