// Package inflate decodes raw DEFLATE streams (RFC 1951) and can resume
// one in the middle: it records a Mark at every block boundary it passes
// (the bit the next block starts at, the output before it, that output's
// CRC-32 and last 32 KiB), and Resume decodes from a mark with only the
// bytes after it. A file import of a single-stream gzip file checkpoints
// a mark between steps, so a step no longer decodes the file from its
// start to find its place (that made a large file's import quadratic).
//
// inflate.go and dict_decoder.go are Go 1.26's compress/flate
// decompressor (BSD-style license, © The Go Authors; see LICENSE), changed
// only to: read through a ByteReader (no internal buffering), count the
// output and its CRC-32 in Read, record a Mark on entering each block
// (nextBlock), and start from a mark (Resume). Compression, the Resetter
// and NewReaderDict are left out.
package inflate
