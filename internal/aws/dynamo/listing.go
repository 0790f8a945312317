package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/kit/pagecursor"
)

// A listing merges one or more index partitions (parts: a tenant's event
// shards, every incident status, every job kind), each read in its index's
// order, into one order by the index sort key. Reading is lazy: a part is
// read again only when its next item could come before every item already
// read, so a page of n items over p parts costs about p queries of n/p
// items, not p queries of n. A page makes at most a budget of queries and
// then stops early (a short page with a next cursor) instead of reading on:
// a filter that matches rarely costs a bounded read per page.
//
// The cursor records, per part, where the page stopped (the last item
// taken from it, or the last key it evaluated), so pages never skip or
// repeat an item while items come and go between calls. It also records
// where the page began, which makes the previous page: the parts read in
// the opposite direction from there, merged, and turned around.

// pos is a place in a listing: an item's index sort key value and the
// table key that breaks ties between equal sort keys.
type pos struct {
	Sort string `json:"s"`
	Tie  string `json:"t"`
}

// before reports whether a comes before b reading in direction desc
// (descending sort keys).
func (a pos) before(b pos, desc bool) bool {
	if a.Sort != b.Sort {
		return (a.Sort > b.Sort) == desc
	}
	return a.Tie != b.Tie && (a.Tie > b.Tie) == desc
}

// hit is one item a part read, with its place.
type hit[T any] struct {
	at pos
	v  T
}

// readFn reads a part's items after from (nil: from its first item) in
// direction desc, up to limit evaluated; stop is the last position it
// evaluated, nil when the part has nothing more.
type readFn[T any] func(ctx context.Context, from *pos, limit int32, desc bool) (items []hit[T], stop *pos, err error)

// listPart is one partition a listing reads.
type listPart[T any] struct {
	// name keys the part in a cursor.
	name string
	read readFn[T]
}

// partEntry is a part's place in a cursor: a position, End (nothing more
// in the cursor's direction), or neither (from the part's first item in
// that direction).
type partEntry struct {
	At  *pos `json:"k,omitempty"`
	End bool `json:"e,omitempty"`
}

// listCursor is a listing's opaque cursor.
type listCursor struct {
	// Filter fingerprints the listing, so a cursor only continues the
	// listing it came from.
	Filter string `json:"f"`
	// Back reads the page before the one the cursor was made from.
	Back  bool                 `json:"b,omitempty"`
	Parts map[string]partEntry `json:"p"`
}

// fingerprint names a listing (its kind and filter) in its cursors.
func fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// errBadCursor wraps pagecursor.ErrInvalid: the callers map it to their
// "invalid cursor" answer.
func errBadCursor(why string) error { return fmt.Errorf("%w: %s", pagecursor.ErrInvalid, why) }

func decodeListCursor(s, filter string, names []string) (listCursor, error) {
	var c listCursor
	if s == "" {
		return listCursor{Filter: filter}, nil
	}
	if err := pagecursor.Decode(s, &c); err != nil {
		return c, err
	}
	if c.Filter != filter {
		return c, errBadCursor("the cursor continues another listing")
	}
	for n := range c.Parts {
		if !slices.Contains(names, n) {
			return c, errBadCursor("the cursor names a partition this listing does not read")
		}
	}
	return c, nil
}

// listRun is one page's reading of a listing.
type listRun[T any] struct {
	parts []*partRun[T]
	// desc is the read direction: the listing's order, or its reverse on
	// a previous page.
	desc bool
	// limit is how many items a query evaluates; budget how many queries
	// the page may make.
	limit         int32
	budget, calls int
	stalled       bool
	back          bool
	filter        string
}

type partRun[T any] struct {
	listPart[T]
	in          partEntry
	buf         []hit[T]
	stop        *pos
	wasRead     bool
	exhausted   bool
	first, last *pos
}

// listOpts are a listing's settings.
type listOpts struct {
	// newestFirst orders the listing by descending sort key.
	newestFirst bool
	// filter fingerprints the listing (fingerprint).
	filter string
	// cursor continues a previous page ("" for the first).
	cursor string
	// limit is how many items one query evaluates.
	limit int32
	// budget is how many queries one page makes at most (at least one
	// per part).
	budget int
}

// ListReadBudget is how many queries a listing page makes per part at
// most before it answers a short page with a cursor.
const ListReadBudget = 4

func newListRun[T any](parts []listPart[T], o listOpts) (*listRun[T], error) {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.name
	}
	c, err := decodeListCursor(o.cursor, o.filter, names)
	if err != nil {
		return nil, err
	}
	r := &listRun[T]{desc: o.newestFirst != c.Back, back: c.Back, filter: o.filter,
		limit: max(o.limit, 1), budget: max(o.budget, len(parts))}
	for _, p := range parts {
		in := c.Parts[p.name]
		r.parts = append(r.parts, &partRun[T]{listPart: p, in: in, exhausted: in.End})
	}
	return r, nil
}

// resumeAt is where a part's unread items begin (exclusive); nil from its
// first item.
func (p *partRun[T]) resumeAt() *pos {
	if p.wasRead {
		return p.stop
	}
	return p.in.At
}

// next returns the next item in the read direction, reading parts as
// needed; ok is false when every part is done or the page's query budget
// is spent (stalled).
func (r *listRun[T]) next(ctx context.Context) (item hit[T], ok bool, err error) {
	for {
		var best *partRun[T]
		for _, p := range r.parts {
			if len(p.buf) > 0 && (best == nil || p.buf[0].at.before(best.buf[0].at, r.desc)) {
				best = p
			}
		}
		var refill []*partRun[T]
		for _, p := range r.parts {
			if len(p.buf) > 0 || p.exhausted {
				continue
			}
			// p's unread items all come after resumeAt: best goes first
			// only if it comes before that.
			if at := p.resumeAt(); best == nil || at == nil || !best.buf[0].at.before(*at, r.desc) {
				refill = append(refill, p)
			}
		}
		if len(refill) == 0 {
			if best == nil {
				return item, false, nil
			}
			item, best.buf = best.buf[0], best.buf[1:]
			at := item.at
			if best.first == nil {
				best.first = &at
			}
			best.last = &at
			return item, true, nil
		}
		if r.calls+len(refill) > r.budget {
			r.stalled = true
			return item, false, nil
		}
		r.calls += len(refill)
		errs := make([]error, len(refill))
		var wg sync.WaitGroup
		for i, p := range refill {
			wg.Go(func() {
				items, stop, err := p.read(ctx, p.resumeAt(), r.limit, r.desc)
				if err != nil {
					errs[i] = err
					return
				}
				p.buf, p.stop, p.wasRead, p.exhausted = items, stop, true, stop == nil
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return item, false, err
		}
	}
}

// take returns up to n next items.
func (r *listRun[T]) take(ctx context.Context, n int) ([]hit[T], error) {
	var out []hit[T]
	for len(out) < n {
		it, ok, err := r.next(ctx)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		out = append(out, it)
	}
	return out, nil
}

// ahead is where each part continues in the read direction after what
// this page took (exclusive: a position taken or evaluated).
func (r *listRun[T]) ahead() map[string]partEntry {
	out := map[string]partEntry{}
	for _, p := range r.parts {
		switch {
		case len(p.buf) > 0 && p.last != nil:
			out[p.name] = partEntry{At: p.last}
		case len(p.buf) > 0 || !p.wasRead && !p.exhausted:
			out[p.name] = p.in
		case p.exhausted:
			out[p.name] = partEntry{End: true}
		default:
			out[p.name] = partEntry{At: p.stop}
		}
	}
	return out
}

// behind is where each part continues the other way from where this page
// began, so that what an earlier page took is read again: the position
// the page began at (in.At) was taken or evaluated then, so the other way
// starts from the part's first item after it (taken or not), never from
// in.At itself.
func (r *listRun[T]) behind() map[string]partEntry {
	out := map[string]partEntry{}
	for _, p := range r.parts {
		switch {
		case p.in.End:
			// Exhausted this way before the page: the other way begins at
			// its last item.
			out[p.name] = partEntry{}
		case p.in.At == nil:
			// Began at its first item: nothing of it is behind.
			out[p.name] = partEntry{End: true}
		case p.first != nil:
			out[p.name] = partEntry{At: p.first}
		case len(p.buf) > 0:
			out[p.name] = partEntry{At: &p.buf[0].at}
		case p.wasRead && p.exhausted:
			// Nothing after in.At: the other way begins at its last item.
			out[p.name] = partEntry{}
		case p.wasRead:
			// Everything from in.At to stop was evaluated and filtered
			// out: coming back from stop finds in.At again.
			out[p.name] = partEntry{At: p.stop}
		default:
			out[p.name] = p.in
		}
	}
	return out
}

// cursors are the page's next and previous cursors in the listing's
// order ("" when there is nothing that way).
func (r *listRun[T]) cursors() (next, prev string, err error) {
	forward, backward := r.ahead(), r.behind()
	if r.back {
		forward, backward = backward, forward
	}
	enc := func(parts map[string]partEntry, back bool) (string, error) {
		for _, e := range parts {
			if !e.End {
				return pagecursor.Encode(listCursor{Filter: r.filter, Back: back, Parts: parts})
			}
		}
		return "", nil
	}
	if next, err = enc(forward, false); err != nil {
		return "", "", err
	}
	prev, err = enc(backward, true)
	return next, prev, err
}

// inOrder turns a page's items into the listing's order (a previous page
// was read the other way).
func inOrder[T, U any](r *listRun[T], items []U) []U {
	if r.back {
		slices.Reverse(items)
	}
	return items
}

// indexPart reads one index partition with Query: in carries the table,
// index, key condition (the listing's window included), filter and
// projection; sortKey is the index sort key and tieKey the table's
// partition key, which with fixed (the index partition key and any
// constant table sort key) make an ExclusiveStartKey from a position.
type indexPart[T any] struct {
	client          *dynamodb.Client
	in              dynamodb.QueryInput
	sortKey, tieKey string
	fixed           map[string]ddbtypes.AttributeValue
	decode          func(item map[string]ddbtypes.AttributeValue) (T, error)
}

func (q indexPart[T]) read(ctx context.Context, from *pos, limit int32, desc bool) ([]hit[T], *pos, error) {
	in := q.in
	in.Limit = aws.Int32(limit)
	in.ScanIndexForward = aws.Bool(!desc)
	if from != nil {
		start := map[string]ddbtypes.AttributeValue{q.sortKey: str(from.Sort), q.tieKey: str(from.Tie)}
		for k, v := range q.fixed {
			start[k] = v
		}
		in.ExclusiveStartKey = start
	}
	out, err := q.client.Query(ctx, &in)
	if err != nil {
		return nil, nil, fmt.Errorf("dynamo: query %s: %w", aws.ToString(q.in.IndexName), err)
	}
	items := make([]hit[T], 0, len(out.Items))
	for _, it := range out.Items {
		v, err := q.decode(it)
		if err != nil {
			return nil, nil, err
		}
		items = append(items, hit[T]{at: pos{Sort: sattr(it, q.sortKey), Tie: sattr(it, q.tieKey)}, v: v})
	}
	var stop *pos
	if out.LastEvaluatedKey != nil {
		stop = &pos{Sort: sattr(out.LastEvaluatedKey, q.sortKey), Tie: sattr(out.LastEvaluatedKey, q.tieKey)}
	}
	return items, stop, nil
}

// partFilter is a listing's filter expression, the same on every part's
// query: attribute equalities, joined by AND.
type partFilter struct {
	exprs  []string
	names  map[string]string
	values map[string]ddbtypes.AttributeValue
}

// eq adds attr = value.
func (f *partFilter) eq(attr, value string) {
	if f.names == nil {
		f.names, f.values = map[string]string{}, map[string]ddbtypes.AttributeValue{}
	}
	ph := strconv.Itoa(len(f.exprs))
	f.names["#f"+ph], f.values[":f"+ph] = attr, str(value)
	f.exprs = append(f.exprs, "#f"+ph+" = :f"+ph)
}

// any reports whether the filter may drop items a query reads.
func (f partFilter) any() bool { return len(f.exprs) > 0 }

// partQuery is one part's query: the index partition pkAttr = pk, its
// sort key sortKey bounded to [since, untilLast] (windowKey; "" for no
// bound), filtered by f, projecting proj (every projected attribute when
// empty).
func partQuery(tableName, index, pkAttr, pk, sortKey, since, untilLast string, f partFilter, proj []string) dynamodb.QueryInput {
	names := map[string]string{"#pk": pkAttr}
	values := map[string]ddbtypes.AttributeValue{":pk": str(pk)}
	for k, v := range f.names {
		names[k] = v
	}
	for k, v := range f.values {
		values[k] = v
	}
	in := dynamodb.QueryInput{
		TableName: aws.String(tableName), IndexName: aws.String(index),
		KeyConditionExpression:   aws.String(windowKey("#pk = :pk", names, values, sortKey, since, untilLast)),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	}
	if f.any() {
		in.FilterExpression = aws.String(strings.Join(f.exprs, " AND "))
	}
	if len(proj) > 0 {
		phs := make([]string, len(proj))
		for i, a := range proj {
			phs[i] = "#p" + strconv.Itoa(i)
			names[phs[i]] = a
		}
		in.ProjectionExpression = aws.String(strings.Join(phs, ", "))
	}
	return in
}

// window is a listing's [since, until) as windowKey bounds: stored-layout
// times, "" where unbounded.
func window(since, until time.Time) (from, untilLast string) {
	if !since.IsZero() {
		from = FormatTime(since)
	}
	if !until.IsZero() {
		untilLast = FormatTime(until.Add(-time.Millisecond))
	}
	return from, untilLast
}

// windowKey adds a [since, until) window on sortKey to a key condition
// (placeholders #w, :wa, :wb); since and until are stored-layout times
// ("" unbounded). The sort keys it bounds are a time, or a time, "#" and
// an id: "$" sorts right after "#", so until minus a millisecond plus "$"
// is the last key before until.
func windowKey(cond string, names map[string]string, values map[string]ddbtypes.AttributeValue, sortKey, since, untilLast string) string {
	switch {
	case since != "" && untilLast != "":
		cond += " AND #w BETWEEN :wa AND :wb"
		values[":wa"], values[":wb"] = str(since), str(untilLast+"$")
	case since != "":
		cond += " AND #w >= :wa"
		values[":wa"] = str(since)
	case untilLast != "":
		cond += " AND #w <= :wb"
		values[":wb"] = str(untilLast + "$")
	default:
		return cond
	}
	names["#w"] = sortKey
	return cond
}
