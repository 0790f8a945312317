// Copyright 2019+ Klaus Post. All rights reserved.
// License information can be found in the LICENSE file.

//go:build !(linux && (amd64 || arm64 || ppc64le || riscv64) && !nounsafe && !purego && !appengine)

package zstd

// newBestTables (evp patch): elsewhere the tables are allocated as
// upstream's were, in the encoder's memory.
func newBestTables() bestTables {
	return bestTables{short: new([bestShortTableSize]prevEntry), long: new([bestLongTableSize]prevEntry)}
}

// populate (evp patch): elsewhere the copy faults the pages in.
func populate([]prevEntry, bool) bool { return false }
