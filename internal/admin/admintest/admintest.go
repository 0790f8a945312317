// Package admintest is the contract suite of the admin function's own
// store (admin.Sessions, admin.SignIns): a session id is used once, reads
// see a sign-out at once, an ended session cannot be revived, and a
// source's sign-in record is saved only over the version that was read,
// so a burst of concurrent attempts counts every one. Every implementation
// runs Exercise; the DynamoDB adapter runs it against the emulators.
package admintest

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/admin"
)

// Store is the admin table as the admin function uses it.
type Store interface {
	admin.Sessions
	admin.SignIns
}

// t0 is near the wall clock: items carry a TTL, and DynamoDB Local's
// sweeper deletes expired items, so a fixed past date could vanish
// mid-test.
var t0 = time.Now().UTC().Truncate(time.Millisecond)

func id() string { return rand.Text() }

// Exercise runs the contract against fresh stores from newStore.
func Exercise(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	ctx := context.Background()

	t.Run("ASessionIsStartedOnceAndReadBack", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		sess := admin.Session{ID: id(), Started: t0, Expires: t0.Add(8 * time.Hour), LastSeen: t0, Source: "src-1"}
		require.NoError(t, s.StartSession(ctx, sess))
		require.ErrorIs(t, s.StartSession(ctx, sess), admin.ErrSessionExists, "an id is used once")
		got, err := s.Session(ctx, sess.ID)
		require.NoError(t, err)
		require.Equal(t, sess.ID, got.ID)
		require.True(t, got.Started.Equal(t0) && got.LastSeen.Equal(t0) && got.Expires.Equal(sess.Expires), "%+v", got)
		require.True(t, got.Ended.IsZero())
		require.Equal(t, "src-1", got.Source)
		_, err = s.Session(ctx, id())
		require.ErrorIs(t, err, admin.ErrNoSession)
	})

	t.Run("ASignOutIsSeenAtOnceAndCannotBeUndone", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		sess := admin.Session{ID: id(), Started: t0, Expires: t0.Add(time.Hour), LastSeen: t0}
		require.NoError(t, s.StartSession(ctx, sess))
		require.NoError(t, s.TouchSession(ctx, sess.ID, t0.Add(time.Minute)))
		got, err := s.Session(ctx, sess.ID)
		require.NoError(t, err)
		require.True(t, got.LastSeen.Equal(t0.Add(time.Minute)))

		require.NoError(t, s.EndSession(ctx, sess.ID, t0.Add(2*time.Minute)))
		got, err = s.Session(ctx, sess.ID)
		require.NoError(t, err)
		require.True(t, got.Ended.Equal(t0.Add(2*time.Minute)), "ended is read back at once: %+v", got)
		require.False(t, got.Live(t0.Add(2*time.Minute), 0))

		require.ErrorIs(t, s.TouchSession(ctx, sess.ID, t0.Add(3*time.Minute)), admin.ErrNoSession, "an ended session is not touched")
		require.NoError(t, s.EndSession(ctx, sess.ID, t0.Add(4*time.Minute)), "a second sign-out is no error")
		got, err = s.Session(ctx, sess.ID)
		require.NoError(t, err)
		require.True(t, got.Ended.Equal(t0.Add(2*time.Minute)), "and keeps the first time")
		require.ErrorIs(t, s.StartSession(ctx, sess), admin.ErrSessionExists, "nor is it started again")
		require.ErrorIs(t, s.TouchSession(ctx, id(), t0), admin.ErrNoSession)
		require.NoError(t, s.EndSession(ctx, id(), t0), "ending what never was is no error")
	})

	t.Run("ASignInRecordIsSavedOnlyOverWhatWasRead", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		src := id()
		rec, err := s.SignIn(ctx, src)
		require.NoError(t, err)
		require.Equal(t, admin.SignInRecord{}, rec, "a new source has the zero record")
		next := admin.SignInRecord{Failures: 1, LastAt: t0, Expires: t0.Add(time.Hour)}
		require.NoError(t, s.SaveSignIn(ctx, src, rec, next))
		require.ErrorIs(t, s.SaveSignIn(ctx, src, rec, next), admin.ErrSignInChanged, "version 0 is taken")
		got, err := s.SignIn(ctx, src)
		require.NoError(t, err)
		require.Equal(t, 1, got.Failures)
		require.True(t, got.LastAt.Equal(t0) && got.LockedUntil.IsZero() && got.Expires.Equal(t0.Add(time.Hour)), "%+v", got)
		require.NotZero(t, got.Version)

		locked := admin.SignInRecord{Failures: 6, LastAt: t0.Add(time.Second), LockedUntil: t0.Add(time.Minute), Expires: t0.Add(2 * time.Hour)}
		require.NoError(t, s.SaveSignIn(ctx, src, got, locked))
		require.ErrorIs(t, s.SaveSignIn(ctx, src, got, next), admin.ErrSignInChanged, "a stale version loses")
		again, err := s.SignIn(ctx, src)
		require.NoError(t, err)
		require.Equal(t, 6, again.Failures)
		require.True(t, again.LockedUntil.Equal(t0.Add(time.Minute)))
		require.Greater(t, again.Version, got.Version)

		other, err := s.SignIn(ctx, id())
		require.NoError(t, err)
		require.Zero(t, other.Failures, "sources are separate")
	})

	t.Run("ConcurrentSavesOverOneVersionHaveOneWinner", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		src := id()
		rec, err := s.SignIn(ctx, src)
		require.NoError(t, err)
		var won, lost atomic.Int32
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Go(func() {
				err := s.SaveSignIn(ctx, src, rec, admin.SignInRecord{Failures: i + 1, LastAt: t0, Expires: t0.Add(time.Hour)})
				switch {
				case err == nil:
					won.Add(1)
				case errors.Is(err, admin.ErrSignInChanged):
					lost.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		require.Equal(t, int32(1), won.Load())
		require.Equal(t, int32(11), lost.Load())
	})
}
