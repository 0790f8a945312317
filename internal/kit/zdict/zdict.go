package zdict

import (
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// dictionaries are the shipped dictionaries, dict/<name>-<version>.dict.
//
//go:embed dict/*.dict
var dictionaries embed.FS

// versions names every shipped dictionary by version (also its zstd
// dictionary id). Never change or remove an entry: stored items name it.
var versions = map[int]string{
	1: "stripe-1",
}

//go:generate go test -run ^TestTableSnapshotsAreCurrent$ -update-tables .

// Window is the encoders' window size (a payload's matches reach this far
// back); the table snapshots are built for it.
const Window = 1 << 20

// stripe1Tables is the snapshot of the match tables the best-level
// encoder builds from stripe-1 at Window (third_party/compress,
// PATCHES.md): a string, so the encoder reads the binary's copy in place
// (read-only data, paged in from the file as it is read) instead of
// allocating and building 2.5 MB of tables at cold start. Generated: go
// generate ./internal/kit/zdict (TestTableSnapshotsAreCurrent fails when
// a snapshot differs from what the encoder builds).
//
//go:embed dict/stripe-1.tables
var stripe1Tables string

// Snapshot is the table snapshot of dictionary version ("": none), as
// shipped: every current version has one (TestTableSnapshotsAreCurrent),
// so Warm builds no tables (TestWarmBuildsNoTables). A switch, not a map:
// a binary that never compresses (the consumers only read payloads)
// leaves the snapshots out. A new dictionary version adds its case here
// and its snapshot with go generate.
func Snapshot(version int) string {
	switch version {
	case 1:
		return stripe1Tables
	}
	return ""
}

// current is the version new payloads of a source are compressed with;
// sources without one get zstd without a dictionary (version 0).
var current = map[string]int{
	"stripe": 1,
}

// MaxDecoded bounds what one payload may decompress to.
const MaxDecoded = 8 << 20

// ErrUnknownVersion: the payload names a dictionary this build does not
// ship.
var ErrUnknownVersion = errors.New("zdict: unknown dictionary version")

// raws are the shipped dictionaries, by version, checked against their
// zstd ids.
var raws = sync.OnceValues(func() (map[int][]byte, error) {
	out := map[int][]byte{}
	for v, name := range versions {
		raw, err := dictionaries.ReadFile("dict/" + name + ".dict")
		if err != nil {
			return nil, fmt.Errorf("zdict: dictionary %d: %w", v, err)
		}
		id, err := dictionaryID(raw)
		if err != nil {
			return nil, fmt.Errorf("zdict: dictionary %d: %w", v, err)
		}
		if int(id) != v {
			return nil, fmt.Errorf("zdict: dictionary %s has zstd id %d, want %d", name, id, v)
		}
		out[v] = raw
	}
	return out, nil
})

// dictionaryID is the id in a zstd dictionary's header (its magic number,
// then the id, little-endian). Read from the header alone: the encoder and
// the decoder parse the dictionary whole anyway, and zstd.InspectDictionary
// parsing it a first time cost a cold start about a millisecond
// (TestDictionaryIDIsZstds holds it equal to the library's reading).
func dictionaryID(raw []byte) (uint32, error) {
	if len(raw) < 8 || binary.LittleEndian.Uint32(raw) != dictMagic {
		return 0, errors.New("not a zstd dictionary")
	}
	return binary.LittleEndian.Uint32(raw[4:]), nil
}

// dictMagic opens every zstd dictionary (RFC 8878, section 5).
const dictMagic = 0xEC30A437

// encoders are built once per process, on first use (or by Warm). Each
// dictionary gets one encoder at zstd's best level (its ratio keeps a
// Stripe event's ledger item within one write unit:
// docs/payload-compression.md), whose match tables are built from the
// dictionary once and then kept: the patched encoder (third_party/compress,
// PATCHES.md) puts back only the entries a payload touched instead of
// copying the tables whole for every payload. One encoder, not one per
// core: Lambda gives ingest a fraction of a core, a payload takes well
// under a millisecond, and a second encoder would build its tables a
// second time.
//
// Built behind a function, not a package-level sync.OnceValues: that
// would reference the builder (and with it the encoder and the table
// snapshots, 2.6 MB) from the package's init, linking them into every
// binary that only decompresses.
func encoders() (map[int]*zstd.Encoder, error) {
	encoderSet.once.Do(func() { encoderSet.encs, encoderSet.err = newEncoders() })
	return encoderSet.encs, encoderSet.err
}

var encoderSet struct {
	once sync.Once
	encs map[int]*zstd.Encoder
	err  error
}

func newEncoders() (map[int]*zstd.Encoder, error) {
	dicts, err := raws()
	if err != nil {
		return nil, err
	}
	out := map[int]*zstd.Encoder{}
	for v, raw := range dicts {
		dictOpts := append(encoderOptions(), zstd.WithEncoderDict(raw))
		if snap := Snapshot(v); snap != "" {
			dictOpts = append(dictOpts, zstd.WithEncoderDictSnapshot(snap))
		}
		enc, err := zstd.NewWriter(nil, dictOpts...)
		if err != nil {
			return nil, fmt.Errorf("zdict: dictionary %d: %w", v, err)
		}
		out[v] = enc
	}
	return out, nil
}

// plainEncoder is the encoder without a dictionary (version 0: sources
// without one, such as internal producers' payloads), built on its first
// payload rather than by Warm: a Stripe-only environment never needs its
// 2.5 MB of tables, and allocating them at cold start cost a garbage
// collection. Behind a function, as encoders.
func plainEncoder() (*zstd.Encoder, error) {
	plainSet.once.Do(func() { plainSet.enc, plainSet.err = zstd.NewWriter(nil, encoderOptions()...) })
	return plainSet.enc, plainSet.err
}

var plainSet struct {
	once sync.Once
	enc  *zstd.Encoder
	err  error
}

func encoderOptions() []zstd.EOption {
	return []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(Window)}
}

// decoder is built once per process, on first use: ingest's publishes do
// not need it.
var decoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	dicts, err := raws()
	if err != nil {
		return nil, err
	}
	all := make([][]byte, 0, len(dicts))
	for _, raw := range dicts {
		all = append(all, raw)
	}
	return zstd.NewReader(nil, zstd.WithDecoderDicts(all...), zstd.WithDecoderMaxMemory(MaxDecoded), zstd.WithDecoderConcurrency(2))
})

// Warm builds the current dictionaries' encoders now (a function that
// compresses every payload, ingest, calls it at cold start, where Lambda
// gives init more CPU than the handler gets, instead of in its first
// event's answer): each fills its 2.5 MB of working match tables with one
// copy of the snapshot the binary carries, building none, once per process
// (docs/payload-compression.md).
func Warm() error {
	for source, v := range current {
		if _, _, err := CompressWith(v, []byte(`{"source":"`+source+`"}`)); err != nil {
			return err
		}
	}
	return nil
}

// Current is the dictionary version new payloads of source are compressed
// with (0: none).
func Current(source string) int { return current[source] }

// Compress compresses p with the current dictionary of source and returns
// the version it used.
func Compress(source string, p []byte) (z []byte, version int, err error) {
	return CompressWith(Current(source), p)
}

// CompressWith compresses p with dictionary version (0: none).
func CompressWith(version int, p []byte) ([]byte, int, error) {
	if version == 0 {
		enc, err := plainEncoder()
		if err != nil {
			return nil, 0, err
		}
		return enc.EncodeAll(p, nil), 0, nil
	}
	encs, err := encoders()
	if err != nil {
		return nil, 0, err
	}
	enc, ok := encs[version]
	if !ok {
		return nil, 0, fmt.Errorf("%w %d", ErrUnknownVersion, version)
	}
	return enc.EncodeAll(p, nil), version, nil
}

// Decompress reverses Compress: z must have been written with dictionary
// version (the frame names its dictionary too; both must agree).
func Decompress(z []byte, version int) ([]byte, error) {
	dicts, err := raws()
	if err != nil {
		return nil, err
	}
	if _, ok := dicts[version]; !ok && version != 0 {
		return nil, fmt.Errorf("%w %d", ErrUnknownVersion, version)
	}
	var h zstd.Header
	if err := h.Decode(z); err != nil {
		return nil, fmt.Errorf("zdict: %w", err)
	}
	if int(h.DictionaryID) != version {
		return nil, fmt.Errorf("zdict: payload written with dictionary %d, item says %d", h.DictionaryID, version)
	}
	dec, err := decoder()
	if err != nil {
		return nil, err
	}
	out, err := dec.DecodeAll(z, nil)
	if err != nil {
		return nil, fmt.Errorf("zdict: %w", err)
	}
	return out, nil
}
