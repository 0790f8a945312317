package zdict_test

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
// (an entry left behind by the payload before would change a match) and
// built its tables from the dictionary (zdict's read the snapshot), and
// it decodes to the payload.
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

var updateTables = flag.Bool("update-tables", false, "rewrite dict/*.tables from the dictionaries (go generate ./internal/kit/zdict)")

// Every shipped dictionary has a table snapshot, and each is exactly what
// the encoder builds from its dictionary at zdict's window: a snapshot
// cannot drift from the dictionary or the encoder (a change to either
// fails here until `go generate ./internal/kit/zdict` rewrites it).
func TestTableSnapshotsAreCurrent(t *testing.T) {
	t.Parallel()
	dicts, err := filepath.Glob("dict/*.dict")
	require.NoError(t, err)
	require.NotEmpty(t, dicts)
	for _, path := range dicts {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		d, err := zstd.InspectDictionary(raw)
		require.NoError(t, err)
		want, err := zstd.BestDictSnapshot(raw, zdict.Window)
		require.NoError(t, err)
		tables := strings.TrimSuffix(path, ".dict") + ".tables"
		if *updateTables {
			require.NoError(t, os.WriteFile(tables, want, 0o644))
			continue
		}
		shipped, err := os.ReadFile(tables)
		require.NoError(t, err, "no snapshot for %s: go generate ./internal/kit/zdict", path)
		require.True(t, bytes.Equal(want, shipped), "%s is stale: go generate ./internal/kit/zdict", tables)
		require.Equal(t, string(want), zdict.Snapshot(int(d.ID())), "the binary carries %s", tables)
	}
}

// A process's dictionary encoders take their tables from the snapshots:
// Warm and the payloads after it build none (in a fresh process: the
// encoders are built once per process, and the tests above built their
// own).
func TestWarmBuildsNoTables(t *testing.T) {
	t.Parallel()
	if os.Getenv("ZDICT_FRESH_PROCESS") == "1" {
		require.NoError(t, zdict.Warm())
		samples, err := zdicttest.Samples(samplesDir)
		require.NoError(t, err)
		for _, name := range zdicttest.Names(samples) {
			_, _, err := zdict.Compress("stripe", samples[name])
			require.NoError(t, err)
		}
		require.Zero(t, zstd.BestDictTableBuilds(), "the encoder built a dictionary's tables")
		require.Equal(t, uint64(1), zstd.BestDictTableCopies(), "one copy of the tables into the encoder's, for the process")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWarmBuildsNoTables$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ZDICT_FRESH_PROCESS=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "PASS")
}

// The snapshots' worth per encoder: a dictionary encoder made and its
// first frame written, with its tables built from the dictionary or taken
// from the snapshot (in a warm process: the cold one's page faults are
// BenchmarkColdStart's).
func BenchmarkFirstFrame(b *testing.B) {
	raw, err := os.ReadFile("dict/stripe-1.dict")
	require.NoError(b, err)
	p, err := os.ReadFile(samplesDir + "/invoice.paid.json")
	require.NoError(b, err)
	opts := []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(zdict.Window), zstd.WithEncoderDict(raw)}
	for _, bc := range []struct {
		name string
		opts []zstd.EOption
	}{
		{"built", opts},
		{"snapshot", append(slices.Clip(opts), zstd.WithEncoderDictSnapshot(zdict.Snapshot(1)))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				enc, err := zstd.NewWriter(nil, bc.opts...)
				require.NoError(b, err)
				enc.EncodeAll(p, nil)
				require.NoError(b, enc.Close())
			}
		})
	}
}

// Each payload after the first: the kept tables, only touched entries put
// back.
func BenchmarkCompress(b *testing.B) {
	p, err := os.ReadFile(samplesDir + "/invoice.paid.json")
	require.NoError(b, err)
	require.NoError(b, zdict.Warm())
	for b.Loop() {
		_, _, err := zdict.Compress("stripe", p)
		require.NoError(b, err)
	}
}
