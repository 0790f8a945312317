// Copyright 2019+ Klaus Post. All rights reserved.
// License information can be found in the LICENSE file.

//go:build linux && (amd64 || arm64 || ppc64le || riscv64) && !nounsafe && !purego && !appengine

package zstd

import (
	"syscall"
	"unsafe"
)

const (
	hugePage          = 2 << 20
	madvHugePage      = 14 // MADV_HUGEPAGE
	madvPopulateRead  = 22 // MADV_POPULATE_READ, Linux 5.14
	madvPopulateWrite = 23 // MADV_POPULATE_WRITE, Linux 5.14
)

// newBestTables (evp patch) allocates both tables in one block of memory
// with a 2 MiB boundary inside it, places the long table (exactly 2 MiB
// at 18 bits) on that boundary and the short table beside it, and
// advises the long table's range for a transparent huge page. A fresh
// process then maps it in one fault instead of 512 (in a microVM each
// fault costs some 20 µs: ~10 ms of a cold start). The advice is best
// effort: where the kernel has no transparent huge pages it is refused,
// and the table is mapped in 4 KiB pages as before. The block holds no
// pointers; the two array pointers into it keep it alive. It is 2 MiB
// larger than the tables, address space the tables never touch (never
// mapped in a fresh process).
func newBestTables() bestTables {
	const (
		entry     = int(unsafe.Sizeof(prevEntry{}))
		longBytes = bestLongTableSize * entry
		short     = bestShortTableSize
		long      = bestLongTableSize
	)
	if longBytes%hugePage != 0 {
		return bestTables{short: new([short]prevEntry), long: new([long]prevEntry)}
	}
	block := make([]prevEntry, short+long+hugePage/entry)
	base := uintptr(unsafe.Pointer(&block[0]))
	at := int((base+hugePage-1)&^(hugePage-1)-base) / entry
	t := bestTables{long: (*[long]prevEntry)(block[at : at+long])}
	if at >= short {
		t.short = (*[short]prevEntry)(block[:short])
	} else {
		t.short = (*[short]prevEntry)(block[at+long : at+long+short])
	}
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, uintptr(unsafe.Pointer(t.long)), uintptr(longBytes), madvHugePage)
	return t
}

// populate (evp patch) maps the whole pages of t in one call, for writing
// or only for reading, instead of one page fault per page as a copy
// reaches them, and reports whether it did. A kernel older than 5.14
// refuses the advice: the copy then faults the pages in as before.
func populate(t []prevEntry, write bool) bool {
	if len(t) == 0 {
		return true
	}
	const page = 4096
	start := uintptr(unsafe.Pointer(&t[0]))
	end := start + uintptr(len(t))*unsafe.Sizeof(prevEntry{})
	start = (start + page - 1) &^ (page - 1)
	end &^= page - 1
	if end <= start {
		return true
	}
	advice := uintptr(madvPopulateRead)
	if write {
		advice = madvPopulateWrite
	}
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, advice)
	return errno == 0
}
