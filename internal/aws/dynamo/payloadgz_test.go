package dynamo

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPayloadPacking(t *testing.T) {
	t.Parallel()
	big := `{"object":"invoice","lines":"` + strings.Repeat("line item, ", 400) + `"}`
	rnd := rand.New(rand.NewPCG(1, 2))
	var noise strings.Builder
	for range 1600 {
		c := byte(' ' + 1 + rnd.IntN(94))
		if c == '"' || c == '\\' {
			c = 'x'
		}
		noise.WriteByte(c)
	}
	random := `{"k":"` + noise.String() + `"}`
	for _, c := range []struct {
		name       string
		in         string
		compressed bool
	}{
		{"small stays plain", `{"a":1}`, false},
		{"at the threshold stays plain", `{"k":"` + strings.Repeat("a", compressAbove-8) + `"}`, false},
		{"large and repetitive is compressed", big, true},
		{"large but incompressible enough stays plain", random, false},
		{"empty", "", false},
	} {
		plain, gz := packPayload([]byte(c.in))
		require.Equal(t, c.compressed, gz != nil, c.name)
		if c.compressed {
			require.Empty(t, plain)
			require.Less(t, len(gz), len(c.in)*4/5, c.name)
		}
		out, err := unpackPayload(plain, gz)
		require.NoError(t, err)
		require.Equal(t, c.in, string(out), c.name)
	}
	_, err := unpackPayload("", []byte("not gzip"))
	require.Error(t, err)
}
