package pagecursor_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/pagecursor"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	type pos struct {
		Shard int
		Key   string
	}
	s, err := pagecursor.Encode(pos{3, "k"})
	require.NoError(t, err)
	var got pos
	require.NoError(t, pagecursor.Decode(s, &got))
	require.Equal(t, pos{3, "k"}, got)
	require.ErrorIs(t, pagecursor.Decode("!!", &got), pagecursor.ErrInvalid)
	require.ErrorIs(t, pagecursor.Decode("bm90LWpzb24", &got), pagecursor.ErrInvalid)
}
