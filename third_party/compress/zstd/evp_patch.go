// Copyright 2019+ Klaus Post. All rights reserved.
// License information can be found in the LICENSE file.

package zstd

import "sync/atomic"

// bestDictTableCopies (evp patch, PATCHES.md) counts the whole copies of a
// dictionary's match tables into a best-compression encoder's tables:
// one per encoder and dictionary, never one per frame.
var bestDictTableCopies atomic.Uint64

// BestDictTableCopies reports how many times this process copied a
// dictionary's match tables whole into a best-compression encoder (evp
// patch: the platform's tests hold it to one per encoder).
func BestDictTableCopies() uint64 { return bestDictTableCopies.Load() }
