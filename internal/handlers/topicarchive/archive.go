package topicarchive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/siteswarm/eventplatform/internal/consume"
)

// DefaultPrefix is the key prefix of archive objects.
const DefaultPrefix = "archive"

// Store writes objects (internal/aws/s3blob implements it for S3).
type Store interface {
	Put(ctx context.Context, bucket, key string, body []byte) error
}

// CheckPrefix refuses a key prefix that is empty or starts or ends with a
// slash (keys are prefix/topic/tenant/day/…).
func CheckPrefix(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return fmt.Errorf("topicarchive: key prefix %q must be non-empty, without leading or trailing slash", p)
	}
	return nil
}

// Archiver is the consumer BatchHandler of an archive topic.
type Archiver struct {
	Store  Store
	Bucket string
	// Prefix of every key (default DefaultPrefix).
	Prefix string
}

var _ consume.BatchHandler = (*Archiver)(nil)

// group is the messages of one object: one tenant, one UTC day.
type group struct {
	tenant string
	day    time.Time
	index  []int
}

// HandleBatch writes one object per (tenant, day of the event timestamp)
// of the batch. The key is derived from the events it holds, so a retried
// batch rewrites the same object instead of adding a copy; an object
// failing to write fails (and retries) only its own events. Readers should
// still treat the event id as the identity: a batch that is re-formed
// differently after a partial failure can archive an event twice.
func (a *Archiver) HandleBatch(ctx context.Context, ms []consume.Message) []error {
	var groups []*group
	byKey := map[string]*group{}
	for i, m := range ms {
		day := m.Event.Timestamp.UTC().Truncate(24 * time.Hour)
		k := m.Event.TenantID + "\x00" + day.Format(time.DateOnly)
		g, ok := byKey[k]
		if !ok {
			g = &group{tenant: m.Event.TenantID, day: day}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.index = append(g.index, i)
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 8)
	)
	for _, g := range groups {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := a.write(ctx, ms, g)
			if err == nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if errs == nil {
				errs = make([]error, len(ms))
			}
			for _, i := range g.index {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errs
}

func (a *Archiver) write(ctx context.Context, ms []consume.Message, g *group) error {
	var body bytes.Buffer
	ids := make([]string, 0, len(g.index))
	first := ms[g.index[0]].Event.Timestamp
	for _, i := range g.index {
		ev := ms[i].Event
		line, err := ev.Marshal()
		if err == nil {
			// One line per event: the payload keeps the producer's bytes,
			// which may be pretty-printed. Compacting only drops
			// insignificant whitespace.
			err = json.Compact(&body, line)
		}
		if err != nil {
			return consume.Permanent(consume.CodeHandlerRejected, fmt.Errorf("encode %s: %w", ev.ID, err))
		}
		body.WriteByte('\n')
		ids = append(ids, ev.ID)
		if ev.Timestamp.Before(first) {
			first = ev.Timestamp
		}
	}
	key := Key(a.prefix(), ms[g.index[0]].Topic, g.tenant, first, ids)
	if err := a.Store.Put(ctx, a.Bucket, key, body.Bytes()); err != nil {
		return consume.Retry(fmt.Errorf("archive %d events to s3://%s/%s: %w", len(ids), a.Bucket, key, err))
	}
	return nil
}

func (a *Archiver) prefix() string {
	if a.Prefix != "" {
		return a.Prefix
	}
	return DefaultPrefix
}

// Key is the object key of an archive object:
// <prefix>/<topic>/<yyyy>/<mm>/<dd>/<tenant>/<hhmmss>-<digest>.ndjson, dated
// by the earliest event (UTC); digest is derived from the set of event ids
// it holds (16 hex digits of SHA-256 over the sorted ids).
func Key(prefix, topic, tenant string, first time.Time, ids []string) string {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	h := sha256.New()
	for _, id := range sorted {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	t := first.UTC()
	return path.Join(prefix, topic, t.Format("2006"), t.Format("01"), t.Format("02"), tenant,
		t.Format("150405")+"-"+hex.EncodeToString(h.Sum(nil))[:16]+".ndjson")
}
