package consume_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	fixed := consume.Backoff{Base: 5 * time.Second, Cap: time.Minute, Jitter: -1}
	cases := []struct {
		receive    int
		retryAfter time.Duration
		want       time.Duration
	}{
		{1, 0, 5 * time.Second},
		{2, 0, 10 * time.Second},
		{3, 0, 20 * time.Second},
		{4, 0, 40 * time.Second},
		{5, 0, time.Minute}, // capped
		{50, 0, time.Minute},
		{0, 0, 5 * time.Second}, // unknown receive count: as the first
		{1, 7 * time.Second, 7 * time.Second},
		{9, 7 * time.Second, 7 * time.Second}, // retry-after replaces the exponent
		{1, time.Hour, time.Minute},           // and is capped too
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, fixed.Delay(tc.receive, tc.retryAfter), "receive %d retry-after %s", tc.receive, tc.retryAfter)
	}
	// Defaults: 5 s base, 15 min cap, 20% jitter (never longer than the
	// exponential delay, never below 80% of it).
	var def consume.Backoff
	for range 100 {
		d := def.Delay(3, 0)
		require.LessOrEqual(t, d, 20*time.Second)
		require.GreaterOrEqual(t, d, 16*time.Second)
	}
	require.Equal(t, consume.DefaultBackoffCap, consume.Backoff{Jitter: -1}.Delay(100, 0))
	half := consume.Backoff{Base: 10 * time.Second, Jitter: 0.5, Rand: func() float64 { return 0.999999 }}
	require.InDelta(t, 5, half.Delay(1, 0).Seconds(), 0.01)
}

func TestClassify(t *testing.T) {
	t.Parallel()
	base := errors.New("boom")
	cases := []struct {
		name  string
		err   error
		kind  consume.Kind
		code  string
		after time.Duration
	}{
		{"plain error is transient", base, consume.KindTransient, "", 0},
		{"retry", consume.Retry(base), consume.KindTransient, "", 0},
		{"retry after", consume.RetryAfter(base, 7*time.Second), consume.KindTransient, "", 7 * time.Second},
		{"permanent", consume.Permanent("subscriber_rejected", base), consume.KindPermanent, "subscriber_rejected", 0},
		{"permanent default code", consume.Permanent("", base), consume.KindPermanent, consume.CodeHandlerRejected, 0},
		{"wrapped permanent", fmt.Errorf("deliver: %w", consume.Permanent("x", base)), consume.KindPermanent, "x", 0},
	}
	for _, tc := range cases {
		kind, code, after := consume.Classify(tc.err)
		require.Equal(t, tc.kind, kind, tc.name)
		require.Equal(t, tc.code, code, tc.name)
		require.Equal(t, tc.after, after, tc.name)
		require.ErrorIs(t, tc.err, base, tc.name)
	}
	require.NoError(t, consume.Retry(nil))
	require.NoError(t, consume.Permanent("x", nil))
	require.NoError(t, consume.RetryAfter(nil, time.Second))
	require.Equal(t, "boom", consume.Permanent("code", base).Error(), "the code is not repeated in the message")
}

// The runtime reads message attributes by name without importing the SQS
// adapter; the names must stay those the adapter writes.
func TestAttributeNamesMatchTheQueueAdapter(t *testing.T) {
	t.Parallel()
	m := sqsqueue.Attributes(outboxMessage())
	for _, name := range []string{"eventId", "tenantId", "topic", "replayOf"} {
		_, ok := m[name]
		require.True(t, ok, name)
	}
	require.Equal(t, "errorCode", outbox.AttrErrorCode)
	require.Equal(t, "errorMessage", outbox.AttrErrorMessage)
	require.Equal(t, "failedAt", outbox.AttrFailedAt)
}
