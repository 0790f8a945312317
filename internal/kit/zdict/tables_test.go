package zdict_test

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/zdict"
	"github.com/siteswarm/eventplatform/internal/kit/zdict/zdicttest"
)

// The dictionary's match tables are built once per process (Warm builds
// them before any payload) and kept: a payload puts back only the entries
// it touched (third_party/compress, PATCHES.md), never copying the tables
// whole again.
func TestDictionaryTablesAreCopiedOncePerProcess(t *testing.T) {
	// Not parallel: it counts the process's copies.
	samples, err := zdicttest.Samples(samplesDir)
	require.NoError(t, err)
	require.NoError(t, zdict.Warm())
	first := zstd.BestDictTableCopies()
	require.Positive(t, first, "Warm builds and copies the tables")
	_, _, err = zdict.Compress("stripe", samples["invoice.paid"])
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(evalSeed, 7))
	for _, name := range zdicttest.Names(samples) {
		for range 4 {
			v, err := zdicttest.Variant(samples[name], r)
			require.NoError(t, err)
			_, _, err = zdict.Compress("stripe", v)
			require.NoError(t, err)
		}
	}
	require.Equal(t, first, zstd.BestDictTableCopies(), "100 more payloads copied the tables again")
}

// What the kept tables give is what fresh ones give: each payload's frame
// is byte for byte the frame of an encoder that never saw another payload
// (an entry left behind by the payload before would change a match).
func TestKeptTablesCompressAsFreshOnes(t *testing.T) {
	t.Parallel()
	samples, err := zdicttest.Samples(samplesDir)
	require.NoError(t, err)
	raw, err := os.ReadFile("dict/stripe-1.dict")
	require.NoError(t, err)
	fresh := func(p []byte) []byte {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(1<<20), zstd.WithEncoderDict(raw))
		require.NoError(t, err)
		defer enc.Close()
		return enc.EncodeAll(p, nil)
	}
	r := rand.New(rand.NewPCG(evalSeed, 11))
	for _, name := range zdicttest.Names(samples) {
		for range 3 {
			v, err := zdicttest.Variant(samples[name], r)
			require.NoError(t, err)
			z, version, err := zdict.Compress("stripe", v)
			require.NoError(t, err)
			require.Equal(t, 1, version)
			require.Equal(t, fresh(v), z, name)
			out, err := zdict.Decompress(z, version)
			require.NoError(t, err)
			require.Equal(t, string(v), string(out))
		}
	}
}
