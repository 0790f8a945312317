package sweep

import (
	"context"
	"sync"
	"time"

	"github.com/siteswarm/eventplatform/internal/outbox"
)

// merger reads every sweeper index partition page by page and yields their
// due rows as one stream, oldest nextRetryAt first. Each partition keeps its
// own cursor, so a backlog larger than a page is walked without re-reading:
// rows the run has handled leave the due range anyway (sent, rescheduled or
// leased into the future).
type merger struct {
	rows    Rows
	now     time.Time
	page    int
	streams []*stream
}

type stream struct {
	status outbox.Status
	shard  int
	buf    []outbox.Row
	cursor string
	done   bool // no more pages to fetch
	err    error
}

func newMerger(rows Rows, now time.Time, page int) *merger {
	m := &merger{rows: rows, now: now, page: page}
	for _, p := range partitions() {
		m.streams = append(m.streams, &stream{status: p.status, shard: p.shard})
	}
	return m
}

// take returns up to n of the oldest remaining due rows.
func (m *merger) take(ctx context.Context, n int) ([]outbox.Row, error) {
	var out []outbox.Row
	for len(out) < n {
		if err := m.fill(ctx); err != nil {
			return out, err
		}
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
			return out, nil
		}
		out = append(out, best.buf[0])
		best.buf = best.buf[1:]
	}
	return out, nil
}

func older(a, b outbox.Row) bool {
	if !a.NextRetryAt.Equal(b.NextRetryAt) {
		return a.NextRetryAt.Before(b.NextRetryAt)
	}
	return a.EventID+"\x00"+a.Topic < b.EventID+"\x00"+b.Topic
}

// fill fetches the next page of every drained stream that has more, in
// parallel.
func (m *merger) fill(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, s := range m.streams {
		if len(s.buf) > 0 || s.done {
			continue
		}
		wg.Go(func() {
			rows, next, err := m.rows.DuePage(ctx, s.status, s.shard, m.now, m.page, s.cursor)
			if err != nil {
				s.err = err
				return
			}
			s.buf, s.cursor, s.done = rows, next, next == ""
		})
	}
	wg.Wait()
	for _, s := range m.streams {
		if s.err != nil {
			err := s.err
			s.err = nil
			return err
		}
	}
	return nil
}
