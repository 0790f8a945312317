package incidenttest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/incident"
)

// exerciseSearch: listings filter by event, error code and type, and a
// page's Prev cursor lists the page before it (issue 36 §3).
func exerciseSearch(t *testing.T, newStore func(t *testing.T) Store) {
	ctx := context.Background()
	t.Run("ListFiltersByEventErrorCodeAndTypeAndGoesBack", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		var all []incident.Incident
		for i := range 10 {
			dl := deadLetter(fmt.Sprintf("evt_s%02d", i%7), []string{"acme", "globex"}[i%2], []string{"billing.events", "crm.sync"}[i/7])
			if i%3 == 0 {
				dl.ErrorCode = "subscriber_rejected"
			}
			if i%4 == 0 {
				dl.Type = "stripe.invoice.payment_failed"
			}
			inc, _, err := incident.Upsert(ctx, store, dl, t0.Add(time.Duration(i)*time.Minute))
			require.NoError(t, err)
			all = append(all, inc)
		}
		want := func(f incident.Filter) []string {
			var ids []string
			for i := len(all) - 1; i >= 0; i-- {
				if f.Matches(all[i]) {
					ids = append(ids, all[i].ID)
				}
			}
			return ids
		}
		for _, f := range []incident.Filter{
			{EventID: "evt_s00"},
			{EventID: "evt_s02", TenantID: "acme"},
			{ErrorCode: "subscriber_rejected", Limit: 2},
			{ErrorCode: "subscriber_rejected", TenantID: "globex"},
			{Type: "stripe.invoice.payment_failed", Limit: 1},
			{Type: "stripe.invoice.paid", Status: incident.StatusOpen, Topic: "billing.events", Limit: 3},
			{ErrorCode: "nothing"},
			{Limit: 3},
			{TenantID: "acme", Limit: 2},
		} {
			t.Run(fmt.Sprintf("%+v", f), func(t *testing.T) {
				var pages [][]string
				var prevs []string
				g := f
				for range 30 {
					page, err := store.List(ctx, g)
					require.NoError(t, err)
					var ids []string
					for _, inc := range page.Incidents {
						ids = append(ids, inc.ID)
					}
					pages, prevs = append(pages, ids), append(prevs, page.Prev)
					if g.Cursor = page.Cursor; g.Cursor == "" {
						break
					}
				}
				require.Empty(t, g.Cursor, "pagination terminates")
				require.Equal(t, want(f), slices.Concat(pages...))
				require.Empty(t, prevs[0], "nothing before the first page")
				for i := 1; i < len(pages); i++ {
					g := f
					g.Cursor = prevs[i]
					page, err := store.List(ctx, g)
					require.NoError(t, err)
					var ids []string
					for _, inc := range page.Incidents {
						ids = append(ids, inc.ID)
					}
					before := slices.Concat(pages[:i]...)
					require.Equal(t, fmt.Sprint(before[len(before)-len(ids):]), fmt.Sprint(ids), "the page before page %d", i)
				}
			})
		}
	})
}
