package dynamo

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/outbox"
)

func TestAttemptStringsRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 5, 10, 0, 0, 123e6, time.UTC)
	for _, a := range []outbox.Attempt{
		{N: 1, At: at, Duration: 41 * time.Millisecond, Delivery: outbox.DeliveryOriginal, Outcome: outbox.OutcomeDelivered, Status: 200, Answer: `{ "received": true }`},
		{N: 2, At: at, Delivery: outbox.DeliveryProbe, Outcome: outbox.OutcomeFailed, Error: "timeout"},
		{N: 3, At: at, Delivery: outbox.DeliveryReplay, Outcome: outbox.OutcomeDeadLettered, Status: 422, Error: "subscriber_rejected", AnswerErased: true, AnswerBytes: 40},
		{N: 4, Outcome: outbox.OutcomeLost},
		{N: 5, At: at, Outcome: outbox.OutcomeFailed, Status: 503, Answer: "  spaces  inside and a trailing one "},
	} {
		got, err := decodeAttempt(encodeAttempt(a))
		require.NoError(t, err, encodeAttempt(a))
		a.DurationMs = a.Duration.Milliseconds()
		if a.Answer != "" {
			a.AnswerBytes = len(a.Answer)
		}
		require.Equal(t, a, got)
	}
	for _, bad := range []string{"", "1 2 3", "x 1 2 - delivered 200 - -", "1 1 1 - delivered 200 - 7", "1 1 1 - delivered 200 - xz"} {
		_, err := decodeAttempt(bad)
		require.Error(t, err, bad)
	}
	require.Len(t, decodeAttempts([]string{"garbage", encodeAttempt(outbox.Attempt{N: 1, Outcome: outbox.OutcomeLost})}), 1, "a malformed entry is skipped")
}

func TestAttemptListKeepsTheLatest(t *testing.T) {
	t.Parallel()
	var kept []outbox.Attempt
	for n := 1; n <= outbox.KeptAttempts; n++ {
		kept = append(kept, outbox.Attempt{N: n, Outcome: outbox.OutcomeFailed, Answer: "x"})
	}
	got := attemptList(kept, []outbox.Attempt{{N: outbox.KeptAttempts + 1, Outcome: outbox.OutcomeDelivered, Answer: "ok"}})
	require.Len(t, got, outbox.KeptAttempts)
	require.Equal(t, 2, got[0].N)
	answers := 0
	for _, a := range got {
		if a.Answer != "" {
			answers++
		}
	}
	require.Equal(t, outbox.KeptAnswers, answers)
	require.Equal(t, "ok", got[len(got)-1].Answer)
	require.Equal(t, "x", kept[0].Answer, "the caller's list is not changed")
}

func TestFitAnswerCutsOnlyTheAnswer(t *testing.T) {
	t.Parallel()
	a := outbox.Attempt{N: 1, Outcome: outbox.OutcomeDelivered, Status: 200, Answer: strings.Repeat("a", 200)}
	whole := listSize([]outbox.Attempt{a})
	got := fitAnswer(nil, []outbox.Attempt{a}, whole-50)
	require.Len(t, got[0].Answer, 150)
	require.LessOrEqual(t, listSize(got), whole-50)
	got = fitAnswer(nil, []outbox.Attempt{a}, 0)
	require.Empty(t, got[0].Answer, "no room: the attempt without its answer")
	require.Equal(t, 1, got[0].N)
}
