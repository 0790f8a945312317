package dynamo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// filtering is a part over items that evaluates limit items a read and
// returns only those keep accepts, as a query with a filter expression
// does (its stop is the last item evaluated, kept or not).
func filtering(name string, items []hit[int], keep func(int) bool) listPart[int] {
	all := memPart(name, items)
	return listPart[int]{name: name, read: func(ctx context.Context, from *pos, limit int32, desc bool) ([]hit[int], *pos, error) {
		got, stop, err := all.read(ctx, from, limit, desc)
		if len(got) > 0 && stop != nil {
			at := got[len(got)-1].at
			stop = &at
		}
		return slices.DeleteFunc(got, func(h hit[int]) bool { return !keep(h.v) }), stop, err
	}}
}

// The merged listing, forward and back, over random partitions, page
// sizes, read limits and budgets, with and without a filter that drops
// items after they are read: every kept item once, in order; each page's
// previous page is the page before it; a page reached backward leads
// forward to the page it came from.
func TestListingPagesForwardAndBack(t *testing.T) {
	t.Parallel()
	for seed := range 60 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		nParts := 1 + r.IntN(6)
		byPart := make([][]hit[int], nParts)
		for v := range r.IntN(80) {
			p := r.IntN(nParts)
			// Few distinct times, so equal sort keys across parts occur.
			byPart[p] = append(byPart[p], hit[int]{at: pos{Sort: fmt.Sprintf("t%03d", r.IntN(40)), Tie: fmt.Sprintf("k%04d", v)}, v: v})
		}
		odd := seed%2 == 1
		keep := func(v int) bool { return !odd || v%3 != 0 }
		newestFirst := seed%3 != 0
		var want []hit[int]
		for _, items := range byPart {
			for _, h := range items {
				if keep(h.v) {
					want = append(want, h)
				}
			}
		}
		slices.SortFunc(want, func(a, b hit[int]) int {
			if a.at.before(b.at, newestFirst) {
				return -1
			}
			return 1
		})
		limit := 1 + r.IntN(7)
		opts := func(cursor string) listOpts {
			return listOpts{newestFirst: newestFirst, filter: "f", cursor: cursor, limit: int32(1 + r.IntN(4)), budget: nParts * (1 + r.IntN(3))}
		}
		page := func(cursor string) (ids []int, next, prev string) {
			parts := make([]listPart[int], nParts)
			for i := range parts {
				parts[i] = filtering(fmt.Sprint(i), slices.Clone(byPart[i]), keep)
			}
			run, err := newListRun(parts, opts(cursor))
			require.NoError(t, err)
			hits, err := run.take(context.Background(), limit)
			require.NoError(t, err)
			for _, h := range hits {
				ids = append(ids, h.v)
			}
			ids = inOrder(run, ids)
			next, prev, err = run.cursors()
			require.NoError(t, err)
			return ids, next, prev
		}
		var pages [][]int
		var prevs []string
		cursor := ""
		for range 500 {
			ids, next, prev := page(cursor)
			pages, prevs = append(pages, ids), append(prevs, prev)
			if cursor = next; cursor == "" {
				break
			}
		}
		require.Empty(t, cursor, "seed %d: the listing ends", seed)
		var wantIDs []int
		for _, h := range want {
			wantIDs = append(wantIDs, h.v)
		}
		require.Equal(t, fmt.Sprint(wantIDs), fmt.Sprint(slices.Concat(pages...)), "seed %d: every item once, in order", seed)
		require.Empty(t, prevs[0], "seed %d: nothing before the first page", seed)
		// Back from each page: the items before it, nearest first, as
		// many as a page holds (fewer when the budget stops it).
		for i := 1; i < len(pages); i++ {
			if prevs[i] == "" {
				require.Empty(t, slices.Concat(pages[:i]...), "seed %d: no previous page only when nothing came before page %d", seed, i)
				continue
			}
			ids, next, _ := page(prevs[i])
			before := slices.Concat(pages[:i]...)
			require.Equal(t, fmt.Sprint(before[len(before)-len(ids):]), fmt.Sprint(ids), "seed %d: the page before page %d", seed, i)
			// And forward again from there: the page comes back.
			if next != "" {
				again, _, _ := page(next)
				after := slices.Concat(pages[i:]...)
				require.Equal(t, fmt.Sprint(after[:len(again)]), fmt.Sprint(again), "seed %d: forward from the page before page %d", seed, i)
			}
		}
	}
}

func TestListingCursorContinuesOnlyItsListing(t *testing.T) {
	t.Parallel()
	parts := []listPart[int]{memPart("a", []hit[int]{{at: pos{Sort: "1", Tie: "x"}, v: 1}, {at: pos{Sort: "2", Tie: "y"}, v: 2}})}
	run, err := newListRun(parts, listOpts{newestFirst: true, filter: "one", limit: 1, budget: 4})
	require.NoError(t, err)
	_, err = run.take(context.Background(), 1)
	require.NoError(t, err)
	next, _, err := run.cursors()
	require.NoError(t, err)
	require.NotEmpty(t, next)
	_, err = newListRun(parts, listOpts{newestFirst: true, filter: "another", cursor: next, limit: 1, budget: 4})
	require.ErrorContains(t, err, "another listing")
	_, err = newListRun([]listPart[int]{memPart[int]("b", nil)}, listOpts{newestFirst: true, filter: "one", cursor: next, limit: 1, budget: 4})
	require.ErrorContains(t, err, "partition")
	_, err = newListRun(parts, listOpts{filter: "one", cursor: "%%%", limit: 1, budget: 4})
	require.Error(t, err)
}
