// Package incidenttest is the contract suite of incident.Recorder (with the
// replay attestation consumers make): a round trip keeps every field, writes
// are optimistic (a stale version or a second create is ErrConflict),
// concurrent dead letters of one dispatch all count, listings filter, page
// and sort by last failure (by event, error code and type too, and back a
// page); and (ExerciseErasureGuard) no dead letter is recorded once its
// dispatch carries the erasure marker, however it races the erasure. Every
// implementation runs both; the DynamoDB adapter runs them against the
// emulators.
package incidenttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// Store is the incident store dead letters are recorded through, with the
// attestation a consumer makes after a successful replay
// (consume.Incidents).
type Store interface {
	incident.Recorder
	ResolveReplay(ctx context.Context, id string, at time.Time) error
}

var t0 = testkit.T0

func deadLetter(eventID, tenant, topic string) incident.DeadLetter {
	body := []byte(fmt.Sprintf(`{"id":%q,"tenantId":%q}`, eventID, tenant))
	return incident.DeadLetter{
		EventID: eventID, TenantID: tenant, Topic: topic, Type: "stripe.invoice.paid", Source: "stripe",
		SourceQueue: "arn:aws:sqs:us-east-1:000000000000:billing-events-dlq", MessageID: "m-" + eventID,
		ErrorCode: "handler_failed", ErrorMessage: "subscriber answered 500",
		Body: incident.Body{Inline: body, Size: len(body), SHA256: "x"}, By: incident.ActorArchiver,
	}
}

// Exercise runs the contract against fresh stores from newStore.
func Exercise(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	ctx := context.Background()

	t.Run("SaveGetRoundTripAndOptimisticConcurrency", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)

		dl := deadLetter("evt_1", "acme", "billing.events")
		dl.ErrorDetail = "stack trace"
		inc, changed, err := incident.Upsert(ctx, store, dl, t0)
		require.NoError(t, err)
		require.True(t, changed)
		require.Equal(t, 1, inc.Version)

		got, err := store.Get(ctx, incident.ID("evt_1", "billing.events"))
		require.NoError(t, err)
		require.Equal(t, inc, got, "every field survives the round trip")
		require.Equal(t, incident.StatusOpen, got.Status)
		require.Equal(t, 1, got.RetryCount)
		require.Equal(t, []string{"m-evt_1"}, got.MessageIDs)

		// A writer holding a stale version loses.
		stale := got
		_, err = store.Save(ctx, got)
		require.NoError(t, err)
		_, err = store.Save(ctx, stale)
		require.ErrorIs(t, err, incident.ErrConflict)
		// Creating an existing id loses too.
		fresh := got
		fresh.Version = 0
		_, err = store.Save(ctx, fresh)
		require.ErrorIs(t, err, incident.ErrConflict)

		_, err = store.Get(ctx, incident.ID("nope", "billing.events"))
		require.ErrorIs(t, err, incident.ErrNotFound)
	})

	t.Run("ConcurrentDeadLettersCountEachOnce", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)

		const n = 6
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				dl := deadLetter("evt_c", "acme", "billing.events")
				dl.MessageID = fmt.Sprintf("m-%d", i)
				_, _, err := incident.Upsert(ctx, store, dl, t0.Add(time.Duration(i)*time.Second))
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		got, err := store.Get(ctx, incident.ID("evt_c", "billing.events"))
		require.NoError(t, err)
		require.Equal(t, n, got.RetryCount, "no concurrent dead letter is lost")
		require.Len(t, got.History, n)

		// A redelivered dead letter (same message id) changes nothing.
		dl := deadLetter("evt_c", "acme", "billing.events")
		dl.MessageID = "m-3"
		_, changed, err := incident.Upsert(ctx, store, dl, t0.Add(time.Hour))
		require.NoError(t, err)
		require.False(t, changed)
		again, err := store.Get(ctx, got.ID)
		require.NoError(t, err)
		require.Equal(t, got.Version, again.Version)
	})

	t.Run("SecondDeadLetterOfAnInternalEventReopensItsIncident", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		// An internal producer's event is stored under its tenant-scoped
		// key; its incident is keyed on that, not on the bare id.
		dl := deadLetter("evt_x", "acme", "crm.sync")
		dl.EventKey, dl.Source = ledger.ScopedKey("acme", "evt_x"), "storefront"
		first, changed, err := incident.Upsert(ctx, store, dl, t0)
		require.NoError(t, err)
		require.True(t, changed)
		require.Equal(t, incident.ID(ledger.ScopedKey("acme", "evt_x"), "crm.sync"), first.ID)
		_, err = incident.Update(ctx, store, first.ID, func(i *incident.Incident) error {
			return i.StartReplay("ops@example.com", "subscriber fixed?", "", t0.Add(time.Minute), false)
		})
		require.NoError(t, err)

		// The replay fails again: the second dead letter finds the same
		// incident and reopens it (it was lost, retried forever, before).
		dl.MessageID = "m-evt_x-2"
		second, changed, err := incident.Upsert(ctx, store, dl, t0.Add(2*time.Minute))
		require.NoError(t, err)
		require.True(t, changed)
		require.Equal(t, first.ID, second.ID)
		require.Equal(t, incident.StatusOpen, second.Status)
		require.Equal(t, 2, second.RetryCount)
	})

	t.Run("ResolveReplayIsIdempotent", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		inc, _, err := incident.Upsert(ctx, store, deadLetter("evt_r", "acme", "billing.events"), t0)
		require.NoError(t, err)

		// Not retrying: left alone.
		require.NoError(t, store.ResolveReplay(ctx, inc.ID, t0.Add(time.Minute)))
		got, err := store.Get(ctx, inc.ID)
		require.NoError(t, err)
		require.Equal(t, incident.StatusOpen, got.Status)

		_, err = incident.Update(ctx, store, inc.ID, func(i *incident.Incident) error {
			return i.StartReplay("ops@example.com", "fixed the handler", "", t0.Add(2*time.Minute), false)
		})
		require.NoError(t, err)
		at := t0.Add(3 * time.Minute)
		require.NoError(t, store.ResolveReplay(ctx, inc.ID, at))
		require.NoError(t, store.ResolveReplay(ctx, inc.ID, at.Add(time.Minute)), "a second attestation is a no-op")
		got, err = store.Get(ctx, inc.ID)
		require.NoError(t, err)
		require.Equal(t, incident.StatusResolved, got.Status)
		require.Equal(t, "replay", got.ResolvedBy)
		require.True(t, got.ResolvedAt.Equal(at))
		require.Equal(t, t0.Add(2*time.Minute), got.ReplayedAt)
		require.Len(t, got.History, 3)

		require.NoError(t, store.ResolveReplay(ctx, incident.ID("unknown", "x"), at), "an unknown incident is not an error")
	})

	exerciseSearch(t, newStore)

	t.Run("ListFiltersAndPaginates", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)

		// 12 incidents: tenants acme/globex, topics billing/crm, a minute apart;
		// every third one triaged.
		var all []incident.Incident
		for i := range 12 {
			tenant := []string{"acme", "globex"}[i%2]
			topic := []string{"billing.events", "crm.sync"}[(i/2)%2]
			inc, _, err := incident.Upsert(ctx, store, deadLetter(fmt.Sprintf("evt_%02d", i), tenant, topic), t0.Add(time.Duration(i)*time.Minute))
			require.NoError(t, err)
			if i%3 == 0 {
				inc, err = incident.Transition(ctx, store, inc.ID, incident.StatusTriaged, "ops", "looking", t0.Add(time.Hour))
				require.NoError(t, err)
			}
			all = append(all, inc)
		}
		want := func(f incident.Filter) []string {
			var ids []string
			for i := len(all) - 1; i >= 0; i-- { // newest first
				if f.Matches(all[i]) {
					ids = append(ids, all[i].ID)
				}
			}
			return ids
		}
		listAll := func(f incident.Filter) []string {
			var ids []string
			for pages := 0; ; pages++ {
				require.Less(t, pages, 20, "pagination terminates")
				page, err := store.List(ctx, f)
				require.NoError(t, err)
				require.LessOrEqual(t, len(page.Incidents), f.PageSize())
				for _, inc := range page.Incidents {
					require.Empty(t, inc.Body.Inline, "listings carry no body")
					require.Empty(t, inc.History, "listings carry no history")
					ids = append(ids, inc.ID)
				}
				if page.Cursor == "" {
					return ids
				}
				f.Cursor = page.Cursor
			}
		}
		for _, f := range []incident.Filter{
			{},
			{Limit: 5},
			{Status: incident.StatusOpen, Limit: 3},
			{Status: incident.StatusTriaged},
			{TenantID: "acme", Limit: 2},
			{TenantID: "globex", Status: incident.StatusOpen, Limit: 2},
			{Topic: "crm.sync", Limit: 4},
			{TenantID: "acme", Topic: "billing.events"},
			{Since: t0.Add(3 * time.Minute), Until: t0.Add(9 * time.Minute), Limit: 2},
			{Status: incident.StatusOpen, Since: t0.Add(5 * time.Minute)},
			{TenantID: "acme", Until: t0.Add(4 * time.Minute)},
			{Status: incident.StatusResolved},
		} {
			t.Run(fmt.Sprintf("%+v", f), func(t *testing.T) {
				require.Equal(t, want(f), listAll(f))
			})
		}

		// Pages stay exact while the listed incidents change status between
		// calls (what a replay by filter does).
		openIDs := want(incident.Filter{Status: incident.StatusOpen})
		require.Len(t, openIDs, 8)
		f := incident.Filter{Status: incident.StatusOpen, Limit: 3}
		page, err := store.List(ctx, f)
		require.NoError(t, err)
		seen := map[string]bool{}
		for {
			for _, inc := range page.Incidents {
				require.False(t, seen[inc.ID], "no incident listed twice")
				seen[inc.ID] = true
				_, err := incident.Update(ctx, store, inc.ID, func(i *incident.Incident) error {
					return i.StartReplay("ops", "", "", t0.Add(2*time.Hour), false)
				})
				require.NoError(t, err)
			}
			if page.Cursor == "" {
				break
			}
			f.Cursor = page.Cursor
			page, err = store.List(ctx, f)
			require.NoError(t, err)
		}
		require.Len(t, seen, len(openIDs), "every open incident visited once")

		_, err = store.List(ctx, incident.Filter{Cursor: "%%%"})
		require.Error(t, err)
		_, err = store.List(ctx, incident.Filter{Status: "bogus"})
		require.Error(t, err)
	})

	// An incident that fails again moves up: listings sort and --since filters
	// by when the dispatch last failed, while createdAt stays the first failure.
	t.Run("ListsByLastFailure", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		old := deadLetter("evt_old", "acme", "billing.events")
		old.FailedAt = t0
		first, _, err := incident.Upsert(ctx, store, old, t0)
		require.NoError(t, err)
		fresh := deadLetter("evt_new", "acme", "billing.events")
		fresh.FailedAt = t0.Add(time.Hour)
		_, _, err = incident.Upsert(ctx, store, fresh, t0.Add(time.Hour))
		require.NoError(t, err)

		again := old
		again.MessageID, again.FailedAt = "m-again", t0.Add(2*time.Hour)
		refailed, _, err := incident.Upsert(ctx, store, again, t0.Add(2*time.Hour))
		require.NoError(t, err)
		require.True(t, refailed.CreatedAt.Equal(first.CreatedAt), "createdAt is kept")

		page, err := store.List(ctx, incident.Filter{Status: incident.StatusOpen})
		require.NoError(t, err)
		require.Len(t, page.Incidents, 2)
		require.Equal(t, first.ID, page.Incidents[0].ID, "the re-failure lists first")
		page, err = store.List(ctx, incident.Filter{TenantID: "acme", Since: t0.Add(90 * time.Minute)})
		require.NoError(t, err)
		require.Len(t, page.Incidents, 1)
		require.Equal(t, first.ID, page.Incidents[0].ID, "--since sees the re-failure of an old incident")
	})
}

// Guarded is a store with the dispatches its dead letters are guarded by.
type Guarded struct {
	Store Store
	// Dispatch stores an event of tenant (by its storage key) with a
	// dispatch row to each topic, as ingest commits it.
	Dispatch func(t *testing.T, key, tenant string, topics ...string)
	// Erase puts the erasure marker on the event's rows, as the subject
	// erasure does.
	Erase func(t *testing.T, key string)
}

// ExerciseErasureGuard runs the contract of the guarded write
// (incident.Recorder.SaveDeadLetter, docs/architecture.md §5, guarantee
// 12): a dead letter of an erased dispatch opens no incident and reopens
// none (outbox.ErrErased, nothing written), whenever it comes; one whose
// dispatch carries no marker, or has no row at all, is recorded.
func ExerciseErasureGuard(t *testing.T, newGuarded func(t *testing.T) Guarded) {
	t.Helper()
	ctx := context.Background()

	t.Run("ADeadLetterOfAnErasedEventOpensNoIncident", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t)
		g.Dispatch(t, "evt_er", "acme", "billing.events", "crm.sync")
		g.Erase(t, "evt_er")
		for _, topic := range []string{"billing.events", "crm.sync"} {
			_, _, err := incident.Upsert(ctx, g.Store, deadLetter("evt_er", "acme", topic), t0)
			require.ErrorIs(t, err, outbox.ErrErased, topic)
			_, err = g.Store.Get(ctx, incident.ID("evt_er", topic))
			require.ErrorIs(t, err, incident.ErrNotFound, "nothing was written for %s", topic)
		}
	})

	t.Run("AnIncidentIsNotReopenedWithTheDataOfAnErasedEvent", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t)
		g.Dispatch(t, "evt_re", "acme", "billing.events")
		first, changed, err := incident.Upsert(ctx, g.Store, deadLetter("evt_re", "acme", "billing.events"), t0)
		require.NoError(t, err)
		require.True(t, changed)
		g.Erase(t, "evt_re")
		again := deadLetter("evt_re", "acme", "billing.events")
		again.MessageID, again.ErrorMessage = "m-again", "subscriber answered: contact ann@example.test exists"
		_, _, err = incident.Upsert(ctx, g.Store, again, t0.Add(time.Minute))
		require.ErrorIs(t, err, outbox.ErrErased)
		got, err := g.Store.Get(ctx, first.ID)
		require.NoError(t, err)
		require.Equal(t, first, got, "the incident is as it was (the erasure redacts it)")
	})

	t.Run("DeadLettersWithoutAMarkerAreRecorded", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t)
		g.Dispatch(t, "evt_kept", "acme", "billing.events")
		g.Dispatch(t, "evt_gone", "acme", "billing.events")
		g.Erase(t, "evt_gone")
		// A dispatch with no marker, and a dead letter whose event has no
		// row (expired, or never stored): recorded.
		for _, id := range []string{"evt_kept", "evt_never_stored"} {
			inc, changed, err := incident.Upsert(ctx, g.Store, deadLetter(id, "acme", "billing.events"), t0)
			require.NoError(t, err, id)
			require.True(t, changed, id)
			got, err := g.Store.Get(ctx, inc.ID)
			require.NoError(t, err)
			require.Equal(t, inc, got)
		}
		// The erased dispatch's own dead letter is refused.
		_, _, err := incident.Upsert(ctx, g.Store, deadLetter("evt_gone", "acme", "billing.events"), t0)
		require.ErrorIs(t, err, outbox.ErrErased)
	})

	// Dead letters of one dispatch race its erasure: each is recorded
	// before the marker or refused, never written after it.
	t.Run("NoDeadLetterIsRecordedAfterTheMarker", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t)
		g.Dispatch(t, "evt_race", "acme", "billing.events")
		id := incident.ID("evt_race", "billing.events")
		var (
			wg     sync.WaitGroup
			erased = make(chan struct{})
			after  = make(chan error, 64)
		)
		for i := range 8 {
			wg.Go(func() {
				for j := 0; ; j++ {
					select {
					case <-erased:
						return
					default:
					}
					dl := deadLetter("evt_race", "acme", "billing.events")
					dl.MessageID = fmt.Sprintf("m-%d-%d", i, j)
					_, _, err := incident.Upsert(ctx, g.Store, dl, t0.Add(time.Duration(j)*time.Second))
					if err != nil && !errors.Is(err, outbox.ErrErased) && !errors.Is(err, incident.ErrConflict) {
						after <- err
						return
					}
				}
			})
		}
		time.Sleep(50 * time.Millisecond)
		g.Erase(t, "evt_race")
		marked, err := g.Store.Get(ctx, id)
		if errors.Is(err, incident.ErrNotFound) {
			marked = incident.Incident{}
		} else {
			require.NoError(t, err)
		}
		for i := range 8 {
			dl := deadLetter("evt_race", "acme", "billing.events")
			dl.MessageID = fmt.Sprintf("m-after-%d", i)
			_, _, err := incident.Upsert(ctx, g.Store, dl, t0.Add(time.Hour))
			require.ErrorIs(t, err, outbox.ErrErased, "a dead letter after the marker")
		}
		close(erased)
		wg.Wait()
		close(after)
		for err := range after {
			require.NoError(t, err)
		}
		got, err := g.Store.Get(ctx, id)
		if marked.ID == "" {
			require.ErrorIs(t, err, incident.ErrNotFound, "no incident was opened after the marker")
			return
		}
		require.NoError(t, err)
		require.Equal(t, marked.Version, got.Version, "the incident did not change after the marker")
	})
}
