package outboxsweep

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/siteswarm/eventplatform/internal/outbox"
)

// merger reads sweeper index partitions page by page and yields their due
// rows as one stream, oldest nextRetryAt first. Each partition keeps its
// own cursor, so a backlog larger than a page is walked without re-reading:
// rows the run has handled leave the due range anyway (sent, rescheduled or
// leased into the future). A partition whose read fails is dropped for the
// rest of the run and reported; the others are still swept.
type merger struct {
	rows    Rows
	now     time.Time
	page    int
	streams []*stream
	// failed names the partitions whose read failed, with the error.
	failed map[string]error
}

type stream struct {
	status outbox.Status
	shard  int
	buf    []outbox.Row
	cursor string
	done   bool // no more pages to fetch
	err    error
}

func (s *stream) name() string {
	if s.status == "" {
		return fmt.Sprintf("due#%d", s.shard)
	}
	return fmt.Sprintf("%s#%d", s.status, s.shard)
}

// newMerger reads every shard of the given statuses due at now.
func newMerger(rows Rows, statuses []outbox.Status, now time.Time, page int) *merger {
	m := &merger{rows: rows, now: now, page: page, failed: map[string]error{}}
	for _, st := range statuses {
		for shard := range rows.Shards() {
			m.streams = append(m.streams, &stream{status: st, shard: shard})
		}
	}
	return m
}

// take returns up to n of the oldest remaining due rows.
func (m *merger) take(ctx context.Context, n int) []outbox.Row {
	var out []outbox.Row
	for len(out) < n {
		m.fill(ctx)
		var best *stream
		for _, s := range m.streams {
			if len(s.buf) == 0 {
				continue
			}
			if best == nil || older(s.buf[0], best.buf[0]) {
				best = s
			}
		}
		if best == nil {
			if m.reading() {
				// A page came back empty but its partition goes on:
				// the due index names rows that are read afterwards, and
				// rows another sender took between the two are left out.
				continue
			}
			return out
		}
		out = append(out, best.buf[0])
		best.buf = best.buf[1:]
	}
	return out
}

// reading reports whether a stream has nothing buffered but more pages to
// fetch (each fetch moves its cursor on or ends it).
func (m *merger) reading() bool {
	for _, s := range m.streams {
		if len(s.buf) == 0 && !s.done {
			return true
		}
	}
	return false
}

func older(a, b outbox.Row) bool {
	if !a.NextRetryAt.Equal(b.NextRetryAt) {
		return a.NextRetryAt.Before(b.NextRetryAt)
	}
	return a.Key+"\x00"+a.Topic < b.Key+"\x00"+b.Topic
}

// fill fetches the next page of every drained stream that has more, in
// parallel.
func (m *merger) fill(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range m.streams {
		if len(s.buf) > 0 || s.done {
			continue
		}
		wg.Go(func() {
			page, err := m.rows.DuePage(ctx, DueParams{Status: s.status, Shard: s.shard, Now: m.now, Limit: m.page, Cursor: s.cursor})
			if err != nil {
				s.err, s.done = err, true
				return
			}
			s.buf, s.cursor, s.done = page.Rows, page.Cursor, page.Cursor == ""
		})
	}
	wg.Wait()
	for _, s := range m.streams {
		if s.err != nil {
			m.failed[s.name()] = s.err
			s.err = nil
		}
	}
}
