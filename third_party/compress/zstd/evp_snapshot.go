// Copyright 2019+ Klaus Post. All rights reserved.
// License information can be found in the LICENSE file.

package zstd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
)

// evp patch (PATCHES.md): a snapshot of the match tables the best level
// builds from a dictionary, made ahead of time (BestDictSnapshot, at
// `go generate`) and shipped in the binary, so a process maps them
// instead of building them: the tables are read in place (the binary's
// read-only data, paged in from the file on demand) when the platform
// stores integers little-endian, copied once otherwise.
//
// Format: a 32-byte header — the magic "evpzbest", then little-endian
// uint32s: format version (1), dictionary id, the window size the
// offsets are built for (maxMatchOff), short and long table entries, 0 —
// and the short then the long table, each entry its offset and prev as
// little-endian int32s.

const (
	bestSnapshotMagic   = "evpzbest"
	bestSnapshotVersion = 1
	bestSnapshotHeader  = 32
)

// bestDictSnapshot is a parsed snapshot.
type bestDictSnapshot struct {
	dictID      uint32
	maxMatchOff int32
	short, long []prevEntry
	inPlace     bool
}

// bestDictTableBuilds counts the dictionary tables a best-level encoder
// built instead of taking them from a snapshot.
var bestDictTableBuilds atomic.Uint64

// BestDictTableBuilds reports how many times this process built a
// dictionary's match tables for a best-compression encoder (evp patch: with
// a snapshot, none).
func BestDictTableBuilds() uint64 { return bestDictTableBuilds.Load() }

// BestDictSnapshot (evp patch) builds the match tables an encoder at
// SpeedBestCompression with window size windowSize builds from dict, and
// returns them in the snapshot format WithEncoderDictSnapshot reads.
func BestDictSnapshot(dict []byte, windowSize int) ([]byte, error) {
	d, err := loadDict(dict)
	if err != nil {
		return nil, err
	}
	if windowSize < MinWindowSize || windowSize > MaxWindowSize {
		return nil, fmt.Errorf("zstd: snapshot window size %d out of range", windowSize)
	}
	tables := newBestTables()
	e := &bestFastEncoder{fastBase: fastBase{maxMatchOff: int32(windowSize), bufferReset: math.MaxInt32 - int32(windowSize*2)}, table: tables.short, longTable: tables.long}
	e.Reset(d, true)
	out := make([]byte, bestSnapshotHeader, bestSnapshotHeader+8*(len(e.dictTable)+len(e.dictLongTable)))
	copy(out, bestSnapshotMagic)
	binary.LittleEndian.PutUint32(out[8:], bestSnapshotVersion)
	binary.LittleEndian.PutUint32(out[12:], d.id)
	binary.LittleEndian.PutUint32(out[16:], uint32(e.maxMatchOff))
	binary.LittleEndian.PutUint32(out[20:], uint32(len(e.dictTable)))
	binary.LittleEndian.PutUint32(out[24:], uint32(len(e.dictLongTable)))
	for _, t := range [][]prevEntry{e.dictTable, e.dictLongTable} {
		for _, p := range t {
			out = binary.LittleEndian.AppendUint32(out, uint32(p.offset))
			out = binary.LittleEndian.AppendUint32(out, uint32(p.prev))
		}
	}
	return out, nil
}

// WithEncoderDictSnapshot (evp patch) gives a best-compression encoder the
// tables of its dictionary (WithEncoderDict) built ahead of time by
// BestDictSnapshot, which it then uses instead of building them; the
// output is the same. A string, because the encoder reads it in place
// where the platform stores integers as the snapshot does (an embedded
// string stays in the binary's read-only data, paged in as it is read);
// elsewhere it is decoded into a copy. A snapshot of another dictionary or
// window size is not used (the encoder builds its tables as without one).
func WithEncoderDictSnapshot(snapshot string) EOption {
	return func(o *encoderOptions) error {
		s, err := parseBestSnapshot(snapshot)
		if err != nil {
			return err
		}
		o.bestSnapshot = s
		return nil
	}
}

func parseBestSnapshot(b string) (*bestDictSnapshot, error) {
	if len(b) < bestSnapshotHeader || b[:8] != bestSnapshotMagic {
		return nil, errors.New("zstd: not a best-level table snapshot")
	}
	h := []byte(b[:bestSnapshotHeader])
	if v := binary.LittleEndian.Uint32(h[8:]); v != bestSnapshotVersion {
		return nil, fmt.Errorf("zstd: table snapshot format %d, want %d", v, bestSnapshotVersion)
	}
	short, long := int(binary.LittleEndian.Uint32(h[20:])), int(binary.LittleEndian.Uint32(h[24:]))
	if short != bestShortTableSize || long != bestLongTableSize {
		return nil, fmt.Errorf("zstd: table snapshot of %d and %d entries, the encoder's are %d and %d", short, long, bestShortTableSize, bestLongTableSize)
	}
	if len(b) != bestSnapshotHeader+8*(short+long) {
		return nil, fmt.Errorf("zstd: table snapshot of %d bytes, want %d", len(b), bestSnapshotHeader+8*(short+long))
	}
	s := &bestDictSnapshot{dictID: binary.LittleEndian.Uint32(h[12:]), maxMatchOff: int32(binary.LittleEndian.Uint32(h[16:]))}
	tables := b[bestSnapshotHeader:]
	if all := prevEntriesInPlace(tables); all != nil {
		s.short, s.long, s.inPlace = all[:short:short], all[short:], true
		return s, nil
	}
	all := make([]prevEntry, short+long)
	for i := range all {
		e := []byte(tables[8*i : 8*i+8])
		all[i] = prevEntry{offset: int32(binary.LittleEndian.Uint32(e)), prev: int32(binary.LittleEndian.Uint32(e[4:]))}
	}
	s.short, s.long = all[:short:short], all[short:]
	return s, nil
}

// useSnapshot points the encoder's dictionary tables at its snapshot's
// when the snapshot is d's at the encoder's window size.
func (e *bestFastEncoder) useSnapshot(d *dict) bool {
	s := e.snapshot
	if s == nil || s.dictID != d.id || s.maxMatchOff != e.maxMatchOff {
		bestDictTableBuilds.Add(1)
		return false
	}
	e.dictTable, e.dictLongTable, e.dictShared = s.short, s.long, true
	return true
}

// BestDictSnapshotInPlace reports whether a snapshot would be read in place
// on this platform (little-endian, aligned) rather than copied.
func BestDictSnapshotInPlace(snapshot string) bool {
	s, err := parseBestSnapshot(snapshot)
	return err == nil && s.inPlace
}
