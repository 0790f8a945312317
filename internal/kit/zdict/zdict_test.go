package zdict_test

import (
	"bytes"
	"compress/gzip"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/zdict"
	"github.com/siteswarm/eventplatform/internal/kit/zdict/zdicttest"
)

func TestRoundTripEveryVersion(t *testing.T) {
	t.Parallel()
	samples, err := zdicttest.Samples(samplesDir)
	require.NoError(t, err)
	for _, version := range []int{0, zdict.Current("stripe")} {
		for _, name := range zdicttest.Names(samples) {
			in := variants(t, samples[name], 5, 1)[0]
			z, v, err := zdict.CompressWith(version, in)
			require.NoError(t, err)
			require.Equal(t, version, v)
			out, err := zdict.Decompress(z, version)
			require.NoError(t, err)
			require.Equal(t, string(in), string(out), name)
		}
	}
}

func TestCurrentBySource(t *testing.T) {
	t.Parallel()
	require.Equal(t, 1, zdict.Current("stripe"))
	require.Zero(t, zdict.Current("storefront"), "sources without a dictionary get plain zstd")
}

func TestDecompressRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	z, _, err := zdict.Compress("stripe", []byte(`{"id":"evt_1","object":"event"}`))
	require.NoError(t, err)

	_, err = zdict.Decompress(z, 0)
	require.ErrorContains(t, err, "written with dictionary 1, item says 0")
	_, err = zdict.Decompress(z, 200)
	require.ErrorIs(t, err, zdict.ErrUnknownVersion)
	_, _, err = zdict.CompressWith(200, []byte("{}"))
	require.ErrorIs(t, err, zdict.ErrUnknownVersion)
	_, err = zdict.Decompress([]byte("not zstd"), 1)
	require.Error(t, err)
	corrupt := bytes.Clone(z)
	corrupt[len(corrupt)-2] ^= 0xff // inside the checksum
	_, err = zdict.Decompress(corrupt, 1)
	require.Error(t, err, "the frame checksum catches a flipped byte")
}

// TestDictionaryPays judges the shipped Stripe dictionary on fresh
// variants of every sample type (values it was never trained on): each
// compresses to under three quarters of what gzip did (whether the
// reference event's ledger item then fits one write unit is
// TestStripeLedgerItemFitsOneWriteUnit's, in internal/aws/dynamo).
func TestDictionaryPays(t *testing.T) {
	t.Parallel()
	samples, err := zdicttest.Samples(samplesDir)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(evalSeed, 1))
	for _, name := range zdicttest.Names(samples) {
		v, err := zdicttest.Variant(samples[name], r)
		require.NoError(t, err)
		z, _, err := zdict.Compress("stripe", v)
		require.NoError(t, err)
		var gz bytes.Buffer
		w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		_, _ = w.Write(v)
		require.NoError(t, w.Close())
		require.Less(t, len(z), gz.Len()*3/4, "%s: %d bytes with the dictionary, %d with gzip", name, len(z), gz.Len())
	}
}

// The dictionaries' ids are read from their headers (no second parse at
// cold start): what zstd reads, and a file that is not a dictionary is
// refused.
func TestDictionaryIDIsZstds(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("dict/stripe-1.dict")
	require.NoError(t, err)
	d, err := zstd.InspectDictionary(raw)
	require.NoError(t, err)
	id, err := zdict.DictionaryID(raw)
	require.NoError(t, err)
	require.Equal(t, d.ID(), id)
	_, err = zdict.DictionaryID([]byte(`{"not":"a dictionary"}`))
	require.Error(t, err)
	_, err = zdict.DictionaryID(raw[:7])
	require.Error(t, err)
}
