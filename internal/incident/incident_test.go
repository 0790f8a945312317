package incident_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func TestIDIsDeterministicPerEventAndTopic(t *testing.T) {
	t.Parallel()
	a := incident.ID("evt_1", "billing.events")
	require.Equal(t, a, incident.ID("evt_1", "billing.events"))
	require.Equal(t, "inc_", a[:4])
	require.Len(t, a, 36)
	require.True(t, incident.ValidID(a))
	require.NotEqual(t, a, incident.ID("evt_1", "crm.sync"))
	// The separator keeps ("ab","c") and ("a","bc") apart.
	require.NotEqual(t, incident.ID("ab", "c"), incident.ID("a", "bc"))
	for _, bad := range []string{"", "inc_", "inc_XYZ", "evt_" + a[4:], a + "0", a[:35] + "g"} {
		require.False(t, incident.ValidID(bad), bad)
	}
}

func TestTransitions(t *testing.T) {
	t.Parallel()
	all := incident.Statuses
	allowed := map[[2]incident.Status]bool{
		{incident.StatusOpen, incident.StatusTriaged}:      true,
		{incident.StatusOpen, incident.StatusRetrying}:     true,
		{incident.StatusOpen, incident.StatusIgnored}:      true,
		{incident.StatusTriaged, incident.StatusRetrying}:  true,
		{incident.StatusTriaged, incident.StatusIgnored}:   true,
		{incident.StatusRetrying, incident.StatusResolved}: true,
		{incident.StatusRetrying, incident.StatusOpen}:     true,
	}
	for _, from := range all {
		for _, to := range all {
			t.Run(fmt.Sprintf("%s→%s", from, to), func(t *testing.T) {
				inc := incident.Incident{ID: "inc_x", Status: from}
				err := inc.Move(to, "ops", "because", t0)
				if allowed[[2]incident.Status{from, to}] {
					require.NoError(t, err)
					require.Equal(t, to, inc.Status)
					require.Equal(t, incident.Change{From: from, To: to, By: "ops", At: t0, Note: "because"}, inc.History[0])
					require.Equal(t, t0, inc.UpdatedAt)
				} else {
					require.ErrorIs(t, err, incident.ErrTransition)
					require.Equal(t, from, inc.Status, "a refused move changes nothing")
					require.Empty(t, inc.History)
				}
			})
		}
	}
	inc := incident.Incident{Status: incident.StatusRetrying}
	require.NoError(t, inc.Move(incident.StatusResolved, "replay", "", t0))
	require.Equal(t, t0, inc.ResolvedAt)
	require.Equal(t, "replay", inc.ResolvedBy)
}

func TestStartReplayNeedsForceOutsideOpenAndTriaged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		from          incident.Status
		plain, forced bool
	}{
		{incident.StatusOpen, true, true},
		{incident.StatusTriaged, true, true},
		{incident.StatusRetrying, false, true},
		{incident.StatusResolved, false, true},
		{incident.StatusIgnored, false, true},
	} {
		for _, force := range []bool{false, true} {
			inc := incident.Incident{Status: tc.from}
			err := inc.StartReplay("ops", "", "", t0, force)
			want := tc.plain || force && tc.forced
			if want {
				require.NoError(t, err, "%s force=%v", tc.from, force)
				require.Equal(t, incident.StatusRetrying, inc.Status)
				require.Equal(t, t0, inc.ReplayedAt)
				require.Equal(t, 1, inc.ReplayCount)
			} else {
				require.ErrorIs(t, err, incident.ErrTransition, "%s force=%v", tc.from, force)
				require.Contains(t, err.Error(), "needs force")
			}
		}
	}
}

func TestRecordOpensThenReopens(t *testing.T) {
	t.Parallel()
	dl := incident.DeadLetter{EventID: "evt_1", TenantID: "acme", Topic: "billing.events", MessageID: "m1",
		ErrorCode: "boom", ErrorMessage: "first", By: incident.ActorArchiver}
	inc, changed := incident.Record(nil, dl, t0)
	require.True(t, changed)
	require.Equal(t, incident.ID("evt_1", "billing.events"), inc.ID)
	require.Equal(t, incident.StatusOpen, inc.Status)
	require.Equal(t, 1, inc.RetryCount)
	require.Equal(t, t0, inc.CreatedAt)
	require.Equal(t, t0, inc.LastFailedAt)

	// Redelivered: nothing changes.
	same, changed := incident.Record(&inc, dl, t0.Add(time.Minute))
	require.False(t, changed)
	require.Equal(t, inc, same)

	// Replayed, failed again: reopened, counted, latest error, same id.
	require.NoError(t, inc.StartReplay("ops", "", "", t0.Add(time.Minute), false))
	dl2 := dl
	dl2.MessageID, dl2.ErrorMessage = "m2", "second"
	again, changed := incident.Record(&inc, dl2, t0.Add(2*time.Minute))
	require.True(t, changed)
	require.Equal(t, inc.ID, again.ID)
	require.Equal(t, incident.StatusOpen, again.Status)
	require.Equal(t, 2, again.RetryCount)
	require.Equal(t, "second", again.ErrorMessage)
	require.Equal(t, t0, again.CreatedAt, "createdAt keeps the first failure")
	require.Equal(t, []string{"m1", "m2"}, again.MessageIDs)
	require.Len(t, again.History, 3)
	require.Len(t, inc.History, 2, "the existing incident is not aliased")

	// Unknown tenant for a raw body.
	raw, _ := incident.Record(nil, incident.DeadLetter{EventID: "raw-1", Topic: "t", Raw: true}, t0)
	require.Equal(t, incident.UnknownTenant, raw.TenantID)
}

func TestHistoryIsBoundedKeepingTheOpening(t *testing.T) {
	t.Parallel()
	inc, _ := incident.Record(nil, incident.DeadLetter{EventID: "e", TenantID: "a", Topic: "t", By: "dlq-archiver"}, t0)
	for i := range 200 {
		at := t0.Add(time.Duration(i+1) * time.Minute)
		require.NoError(t, inc.StartReplay("ops", "", "", at, false))
		require.NoError(t, inc.Move(incident.StatusOpen, "dlq-archiver", "", at))
	}
	require.Len(t, inc.History, incident.MaxHistory)
	require.Equal(t, "dlq-archiver", inc.History[0].By)
	require.Empty(t, inc.History[0].From, "the opening entry survives")
	require.Equal(t, t0.Add(200*time.Minute), inc.History[len(inc.History)-1].At)
}

func TestFilter(t *testing.T) {
	t.Parallel()
	inc := incident.Incident{Status: incident.StatusOpen, TenantID: "acme", Topic: "billing.events", CreatedAt: t0.Add(-time.Hour), LastFailedAt: t0}
	for _, tc := range []struct {
		f    incident.Filter
		want bool
	}{
		{incident.Filter{}, true},
		{incident.Filter{Status: incident.StatusOpen, TenantID: "acme", Topic: "billing.events"}, true},
		{incident.Filter{Status: incident.StatusTriaged}, false},
		{incident.Filter{TenantID: "globex"}, false},
		{incident.Filter{Topic: "crm.sync"}, false},
		{incident.Filter{Since: t0}, true},
		{incident.Filter{Since: t0.Add(time.Millisecond)}, false},
		{incident.Filter{Until: t0}, false},
		{incident.Filter{Until: t0.Add(time.Millisecond)}, true},
	} {
		require.Equal(t, tc.want, tc.f.Matches(inc), "%+v", tc.f)
	}
	require.Error(t, incident.Filter{Status: "nope"}.Validate())
	require.Error(t, incident.Filter{Limit: incident.MaxPageSize + 1}.Validate())
	require.Error(t, incident.Filter{Since: t0, Until: t0}.Validate())
	require.NoError(t, incident.Filter{Since: t0, Until: t0.Add(time.Second)}.Validate())
	require.Equal(t, incident.DefaultPageSize, incident.Filter{}.PageSize())
}

// memStore is an in-memory Store for the update helpers' pure logic.
type memStore struct {
	m         map[string]incident.Incident
	conflicts int
}

func (s *memStore) Get(_ context.Context, id string) (incident.Incident, error) {
	inc, ok := s.m[id]
	if !ok {
		return incident.Incident{}, incident.ErrNotFound
	}
	return inc, nil
}

func (s *memStore) Save(_ context.Context, inc incident.Incident) (incident.Incident, error) {
	if s.conflicts > 0 {
		// Someone else wrote first.
		s.conflicts--
		cur := s.m[inc.ID]
		cur.Version++
		s.m[inc.ID] = cur
		return incident.Incident{}, incident.ErrConflict
	}
	if cur, ok := s.m[inc.ID]; ok != (inc.Version > 0) || ok && cur.Version != inc.Version {
		return incident.Incident{}, incident.ErrConflict
	}
	inc.Version++
	s.m[inc.ID] = inc
	return inc, nil
}

func (s *memStore) List(context.Context, incident.Filter) (incident.Page, error) {
	return incident.Page{}, errors.New("unused")
}

func TestUpdateRetriesConflictsAndResolveReplayIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &memStore{m: map[string]incident.Incident{}}
	inc, changed, err := incident.Upsert(ctx, incident.Unguarded{Store: s}, incident.DeadLetter{EventID: "e", TenantID: "a", Topic: "t"}, t0)
	require.NoError(t, err)
	require.True(t, changed)
	s.conflicts = 3
	got, err := incident.Transition(ctx, s, inc.ID, incident.StatusTriaged, "ops", "", t0)
	require.NoError(t, err)
	require.Equal(t, incident.StatusTriaged, got.Status)

	_, err = incident.Transition(ctx, s, inc.ID, incident.StatusResolved, "ops", "", t0)
	require.ErrorIs(t, err, incident.ErrTransition)

	before := s.m[inc.ID].Version
	require.NoError(t, incident.ResolveReplay(ctx, s, inc.ID, t0), "not retrying: left alone")
	require.Equal(t, before, s.m[inc.ID].Version, "and not written")
	require.NoError(t, incident.ResolveReplay(ctx, s, "inc_missing", t0))
}
