package lambdalocal_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/afterward"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
)

// The local Lambda service runs an invocation's work after its answer as
// Lambda does with the afterward extension: the caller has the answer at
// once, the work still runs (its context outliving the handler's), and
// Wait waits for it.
func TestInvokeAnswersBeforeTheWorkAfterIt(t *testing.T) {
	t.Parallel()
	fns := lambdalocal.NewFunctions()
	release := make(chan struct{})
	var done atomic.Bool
	var workErr atomic.Value
	fns.Register("f", func(ctx context.Context) (string, error) {
		afterward.Go(ctx, func(ctx context.Context) {
			<-release
			if ctx.Err() != nil {
				workErr.Store(ctx.Err())
			}
			done.Store(true)
		})
		return "answered", nil
	})
	out, err := fns.Invoke(context.Background(), "f", []byte(`{}`))
	require.NoError(t, err)
	require.JSONEq(t, `"answered"`, string(out))
	require.False(t, done.Load(), "the answer did not wait for the work")

	waited := make(chan struct{})
	go func() { fns.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned before the work was done")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-waited
	require.True(t, done.Load())
	require.Nil(t, workErr.Load(), "the work's context is not cancelled when the handler returns")
}
