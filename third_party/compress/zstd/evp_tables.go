// Copyright 2019+ Klaus Post. All rights reserved.
// License information can be found in the LICENSE file.

package zstd

// bestTables (evp patch) are a best-level encoder's two match tables.
// Upstream keeps them as arrays inside the encoder; here they are arrays
// behind pointers, so that newBestTables can place them: on Linux the
// 2 MiB long table sits on a 2 MiB boundary, advised for a transparent
// huge page (PATCHES.md, part 3).
type bestTables struct {
	short *[bestShortTableSize]prevEntry
	long  *[bestLongTableSize]prevEntry
}
