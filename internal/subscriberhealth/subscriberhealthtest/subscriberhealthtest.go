// Package subscriberhealthtest is the contract suite of health.Store, the
// subscriber-health record of each topic: a missing record reads closed at
// version 0, failures add to the streak in one write and return the record,
// a reset ends a streak without writing a healthy one, and every
// replacement is conditional on the version read. Every implementation
// runs Exercise; the DynamoDB adapter runs it against the emulators.
package subscriberhealthtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
)

// Exercise runs the contract against stores from newStore (each subtest
// gets its own).
func Exercise(t *testing.T, newStore func(t *testing.T) subscriberhealth.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)

	t.Run("AMissingRecordIsClosedAtVersionZero", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		h, err := s.Get(ctx, "a.events")
		require.NoError(t, err)
		require.Equal(t, subscriberhealth.Health{Topic: "a.events", State: subscriberhealth.Closed}, h)
		// Ending a streak that does not exist writes nothing.
		require.NoError(t, s.Reset(ctx, "a.events"))
		h, err = s.Get(ctx, "a.events")
		require.NoError(t, err)
		require.Zero(t, h.Version)
	})

	t.Run("FailuresAddToTheStreakAndReturnTheRecord", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		h, err := s.Fail(ctx, subscriberhealth.Failures{Topic: "a.events", Failures: 3, LastError: "HTTP 503", At: now})
		require.NoError(t, err)
		require.Equal(t, subscriberhealth.Closed, h.State)
		require.Equal(t, 3, h.Streak)
		require.Equal(t, "HTTP 503", h.LastError)
		require.Equal(t, now, h.FailedAt)
		require.Equal(t, int64(1), h.Version)
		h, err = s.Fail(ctx, subscriberhealth.Failures{Topic: "a.events", Failures: 2, LastError: "timeout", At: now.Add(time.Second)})
		require.NoError(t, err)
		require.Equal(t, 5, h.Streak)
		require.Equal(t, "timeout", h.LastError)
		require.Equal(t, int64(2), h.Version)
		got, err := s.Get(ctx, "a.events")
		require.NoError(t, err)
		require.Equal(t, h, got)
		// Another topic's record is another record.
		other, err := s.Get(ctx, "b.events")
		require.NoError(t, err)
		require.Zero(t, other.Version)
	})

	t.Run("AResetEndsAStreak", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		_, err := s.Fail(ctx, subscriberhealth.Failures{Topic: "a.events", Failures: 4, LastError: "HTTP 502", At: now})
		require.NoError(t, err)
		require.NoError(t, s.Reset(ctx, "a.events"))
		h, err := s.Get(ctx, "a.events")
		require.NoError(t, err)
		require.Zero(t, h.Streak)
		require.Equal(t, "HTTP 502", h.LastError, "the last error stays for the operator")
		require.Equal(t, int64(2), h.Version)
		// A second reset has nothing to end and writes nothing.
		require.NoError(t, s.Reset(ctx, "a.events"))
		h, err = s.Get(ctx, "a.events")
		require.NoError(t, err)
		require.Equal(t, int64(2), h.Version)
	})

	t.Run("ConcurrentFailuresAreAllCounted", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for i := range 20 {
			wg.Go(func() {
				_, err := s.Fail(ctx, subscriberhealth.Failures{Topic: "a.events", Failures: 1 + i%2, LastError: "HTTP 503", At: now})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		h, err := s.Get(ctx, "a.events")
		require.NoError(t, err)
		require.Equal(t, 30, h.Streak)
		require.Equal(t, int64(20), h.Version)
	})

	t.Run("ASwapIsConditionalOnTheVersionRead", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		zero, err := s.Get(ctx, "a.events")
		require.NoError(t, err)
		next := subscriberhealth.Health{
			Topic: "a.events", State: subscriberhealth.Open, Since: now, Reason: "10 consecutive transient failures",
			LastError: "HTTP 503", FailedAt: now, ProbeAt: now.Add(30 * time.Second), Level: 2,
			OutageSince: now.Add(-time.Minute), Announced: true, Escalated: true, Concurrency: 4, RampedAt: now.Add(-time.Second), Backlog: 17,
			RecoveredAt: now.Add(-time.Hour),
		}
		written, err := s.Swap(ctx, zero, next)
		require.NoError(t, err)
		require.Equal(t, int64(1), written.Version)
		got, err := s.Get(ctx, "a.events")
		require.NoError(t, err)
		next.Version = 1
		require.Equal(t, next, got, "every field round-trips")

		// A writer that read before the swap loses.
		_, err = s.Swap(ctx, zero, subscriberhealth.Health{Topic: "a.events", State: subscriberhealth.Paused})
		require.ErrorIs(t, err, subscriberhealth.ErrConflict)
		// So does one that read before a failure was recorded.
		_, err = s.Fail(ctx, subscriberhealth.Failures{Topic: "a.events", Failures: 1, LastError: "x", At: now})
		require.NoError(t, err)
		_, err = s.Swap(ctx, got, subscriberhealth.Health{Topic: "a.events", State: subscriberhealth.Closed})
		require.ErrorIs(t, err, subscriberhealth.ErrConflict)
		got, err = s.Get(ctx, "a.events")
		require.NoError(t, err)
		require.Equal(t, subscriberhealth.Open, got.State)

		// Of two concurrent swaps from one read, exactly one wins.
		var wg sync.WaitGroup
		results := make(chan error, 2)
		for _, st := range []subscriberhealth.State{subscriberhealth.HalfOpen, subscriberhealth.Paused} {
			wg.Go(func() {
				_, err := s.Swap(ctx, got, subscriberhealth.Health{Topic: "a.events", State: st})
				results <- err
			})
		}
		wg.Wait()
		close(results)
		won := 0
		for err := range results {
			if err == nil {
				won++
			} else {
				require.ErrorIs(t, err, subscriberhealth.ErrConflict)
			}
		}
		require.Equal(t, 1, won)
	})
}
