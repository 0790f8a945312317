package envconf_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
)

func TestReader(t *testing.T) {
	t.Parallel()
	r := envconf.FromMap(map[string]string{
		"S": " v ", "I": "42", "D": "90s", "B": "true", "L": "a, ,b,", "J": `{"x":"y"}`,
		"BAD_I": "x", "BAD_D": "5", "BAD_B": "maybe", "BAD_J": "{",
	})
	require.Equal(t, "v", r.String("S", "def"))
	require.Equal(t, "def", r.String("MISSING", "def"))
	require.Equal(t, 42, r.Int("I", 1))
	require.Equal(t, 90*time.Second, r.Duration("D", time.Second))
	require.True(t, r.Bool("B", false))
	require.Equal(t, []string{"a", "b"}, r.List("L"))
	var m map[string]string
	r.JSON("J", &m)
	require.Equal(t, map[string]string{"x": "y"}, m)
	require.NoError(t, r.Err())

	require.Equal(t, 7, r.Int("BAD_I", 7), "a malformed value falls back to the default")
	r.Duration("BAD_D", 0)
	r.Bool("BAD_B", false)
	r.JSON("BAD_J", &m)
	err := r.Err()
	require.Error(t, err)
	for _, k := range []string{"BAD_I", "BAD_D", "BAD_B", "BAD_J"} {
		require.ErrorContains(t, err, k, "every problem is reported at once")
	}
}
