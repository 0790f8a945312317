package cursor_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/cursor"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	type pos struct {
		Shard int
		Key   string
	}
	s, err := cursor.Encode(pos{3, "k"})
	require.NoError(t, err)
	var got pos
	require.NoError(t, cursor.Decode(s, &got))
	require.Equal(t, pos{3, "k"}, got)
	require.ErrorIs(t, cursor.Decode("!!", &got), cursor.ErrInvalid)
	require.ErrorIs(t, cursor.Decode("bm90LWpzb24", &got), cursor.ErrInvalid)
}
