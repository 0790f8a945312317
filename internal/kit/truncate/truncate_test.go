package truncate_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/truncate"
)

func TestString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "short", truncate.String("short", 10))
	require.Equal(t, "abc…", truncate.String("abcdef", 3))
	long := strings.Repeat("é", 600) // 2 bytes each
	got := truncate.String(long, 1023)
	require.True(t, utf8.ValidString(got), "never cuts a rune in half")
	require.LessOrEqual(t, len(got), 1023+len("…"))
	require.True(t, strings.HasSuffix(got, "…"))
}

func TestBytes(t *testing.T) {
	t.Parallel()
	require.Equal(t, "short", truncate.Bytes("short", 10))
	require.Equal(t, "abc", truncate.Bytes("abcdef", 3))
	require.Empty(t, truncate.Bytes("abc", 0))
	got := truncate.Bytes(strings.Repeat("é", 10), 5)
	require.Equal(t, "éé", got, "never cuts a rune in half, never over n bytes")
}
