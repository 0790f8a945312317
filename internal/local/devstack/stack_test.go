package devstack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

func TestStackServesIngestBehindLambdaInvoke(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := devstack.Start(ctx, devstack.Options{Addr: "127.0.0.1:0", Log: logging.Discard(), Env: envconf.FromMap(nil)})
	require.NoError(t, err)
	pid := st.Emulators.FauxqsPID()

	resp, err := http.Get(st.URL() + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	raw, err := os.ReadFile("../../../events/ingest/valid/storefront-inquiry-created.json")
	require.NoError(t, err)
	client := awslocal.NewLambdaClient(awslocal.NewConfig(), st.URL())
	for _, want := range []envelope.Status{envelope.StatusEnqueued, envelope.StatusDuplicate} {
		out, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("ingest"), Payload: raw})
		require.NoError(t, err)
		require.Nil(t, out.FunctionError)
		var res envelope.Result
		require.NoError(t, json.Unmarshal(out.Payload, &res))
		require.Equal(t, want, res.Status)
		require.Equal(t, []string{"notifications.events", "crm.sync"}, res.Topics)
	}

	// Bad input is a result, never a function error.
	out, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("ingest"), Payload: []byte(`{"id":"x"}`)})
	require.NoError(t, err)
	require.Nil(t, out.FunctionError)
	var res envelope.Result
	require.NoError(t, json.Unmarshal(out.Payload, &res))
	require.Equal(t, envelope.StatusRejected, res.Status)
	require.Equal(t, envelope.CodeMissingField, res.Error.Code)

	require.NoError(t, st.Close())
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "no emulator child process outlives the stack")
	_, err = http.Get(st.URL() + "/healthz")
	require.Error(t, err, "the listener is closed")
}

func TestStartFailsFastOnBusyPort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := devstack.Start(ctx, devstack.Options{Addr: "127.0.0.1:0", Log: logging.Discard(), Env: envconf.FromMap(nil)})
	require.NoError(t, err)
	defer st.Close()
	_, err = devstack.Start(ctx, devstack.Options{Addr: st.URL()[len("http://"):], Log: logging.Discard(), Env: envconf.FromMap(nil)})
	require.ErrorContains(t, err, "is another `make dev` running?")
}
