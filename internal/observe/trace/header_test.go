package trace

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseHeader(t *testing.T) {
	t.Parallel()
	const root = "1-5759e988-bd862e3fe1be46a994272793"
	for _, c := range []struct {
		in   string
		want header
		str  string
	}{
		{"Root=" + root + ";Parent=53995c3f42cd8ad8;Sampled=1", header{root, "53995c3f42cd8ad8", sampledYes}, "Root=" + root + ";Parent=53995c3f42cd8ad8;Sampled=1"},
		{" Root=" + root + "; Sampled=0 ", header{root, "", sampledNo}, "Root=" + root + ";Sampled=0"},
		{"Root=" + root + ";Parent=53995c3f42cd8ad8;Sampled=?;Lineage=a:1", header{root, "53995c3f42cd8ad8", sampledUnknown}, "Root=" + root + ";Parent=53995c3f42cd8ad8"},
		{"Root=" + root + ";Parent=xyz", header{root, "", sampledUnknown}, "Root=" + root},
		{"Root=2-5759e988-bd862e3fe1be46a994272793", header{}, ""},
		{"Root=1-5759e988-bd862e3fe1be46a99427279;Sampled=1", header{}, ""},
		{"Parent=53995c3f42cd8ad8;Sampled=1", header{}, ""},
		{"", header{}, ""},
		{"garbage", header{}, ""},
	} {
		got := parseHeader(c.in)
		require.Equal(t, c.want, got, c.in)
		if c.str != "" {
			require.Equal(t, c.str, got.String(), c.in)
			require.Equal(t, got, parseHeader(got.String()), "round trip")
		}
		require.Equal(t, c.want.root, TraceID(c.in))
	}
}

func TestTraceIDsAreWellFormed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		id, span := newTraceID(), newSpanID()
		require.True(t, validTraceID(id), id)
		require.True(t, validSpanID(span), span)
		require.False(t, seen[id])
		seen[id] = true
	}
}

// The W3C form of a span's context is the same trace: X-Ray's id without
// its version and dashes, the span as parent, sampled as the flag.
func TestTraceparentIsTheSameTrace(t *testing.T) {
	enabled.Store(true)
	t.Cleanup(func() { enabled.Store(false) })
	s := &span{id: "53995C3F42CD8AD8", traceID: "1-5759e988-bd862e3fe1be46a994272793", sampled: true}
	ctx := withSpan(context.Background(), s)
	require.Equal(t, "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01", Traceparent(ctx))
	s.sampled = false
	require.Equal(t, "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-00", Traceparent(ctx))
	require.Empty(t, Traceparent(context.Background()))
}
