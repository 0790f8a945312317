// Copyright 2019+ Klaus Post. All rights reserved.
// License information can be found in the LICENSE file.

//go:build !((amd64 || arm64 || ppc64le || riscv64) && !nounsafe && !purego && !appengine)

package zstd

// prevEntriesInPlace (evp patch): without unsafe, or on a big-endian
// platform, a snapshot is copied (nil: no in-place view).
func prevEntriesInPlace(string) []prevEntry { return nil }
