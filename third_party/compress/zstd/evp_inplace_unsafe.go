// Copyright 2019+ Klaus Post. All rights reserved.
// License information can be found in the LICENSE file.

//go:build (amd64 || arm64 || ppc64le || riscv64) && !nounsafe && !purego && !appengine

package zstd

import "unsafe"

// prevEntriesInPlace (evp patch) views b, little-endian int32 pairs, as
// prevEntry values without copying it (these little-endian platforms lay
// prevEntry out so), or returns nil when b is not aligned for them. The
// view is read-only: the encoder never writes a snapshot's tables (Reset
// builds another dictionary's in fresh ones), and an embedded string's
// bytes are in read-only memory, so a write would fault, not corrupt.
func prevEntriesInPlace(b string) []prevEntry {
	p := unsafe.Pointer(unsafe.StringData(b))
	if len(b) == 0 || len(b)%int(unsafe.Sizeof(prevEntry{})) != 0 || uintptr(p)%unsafe.Alignof(prevEntry{}) != 0 {
		return nil
	}
	return unsafe.Slice((*prevEntry)(p), len(b)/int(unsafe.Sizeof(prevEntry{})))
}
