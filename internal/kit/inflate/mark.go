package inflate

import (
	"hash/crc32"
	"io"
)

// Mark is a block boundary of a DEFLATE stream: a place decoding can
// resume from with nothing before it (RFC 1951 blocks end there; the
// next block's header starts at bit Bit). Out is the output before it,
// CRC that output's CRC-32 (IEEE), Window its last 32 KiB (or all of it,
// when shorter): what back-references of later blocks may copy.
type Mark struct {
	Bit    int64 // in the compressed input: the file's, counting from its first byte
	Out    int64
	CRC    uint32
	Window []byte
}

// keepMarks bounds the marks a reader keeps: the last ones passed, enough
// to cover what a consumer's buffer holds of decoded output not yet
// consumed (a block is thousands of symbols; a mark is a 32 KiB copy).
const keepMarks = 64

// Reader decodes a raw DEFLATE stream (RFC 1951) read byte by byte (it
// never reads past the stream's end, so what follows — a gzip trailer —
// is left to read), keeping the marks it passes so a later reader can
// resume at one (Resume) instead of decoding from the stream's start.
type Reader struct{ f decompressor }

// NewReader decodes the stream r starts at; offset is where that is in
// the file (marks count their Bit from the file's first byte).
func NewReader(r ByteReader, offset int64) *Reader {
	return start(r, offset, &Mark{Bit: offset * 8})
}

// ByteReader is what a Reader reads: bytes, one at a time (so it never
// reads ahead of what it decodes).
type ByteReader interface {
	io.Reader
	io.ByteReader
}

// Resume decodes from m: r yields the file from byte m.Bit/8 (the byte
// the mark's bit is in), and output (Read, Out, CRC) continues from
// m.Out, with m.Window as the history back-references reach into.
func Resume(r ByteReader, m Mark) (*Reader, error) {
	skip := uint(m.Bit % 8)
	z := start(r, m.Bit/8, &m)
	if skip > 0 {
		c, err := r.ReadByte()
		if err != nil {
			return nil, noEOF(err)
		}
		z.f.roffset++
		z.f.b, z.f.nb = uint32(c)>>skip, 8-skip
	}
	return z, nil
}

func start(r ByteReader, offset int64, m *Mark) *Reader {
	fixedHuffmanDecoderInit()
	z := &Reader{}
	f := &z.f
	f.r = r
	f.roffset = offset
	f.bits = new([maxNumLit + maxNumDist]int)
	f.codebits = new([numCodes]int)
	f.step = (*decompressor).nextBlock
	f.dict.init(maxMatchOffset, m.Window)
	f.out, f.crc = m.Out, m.CRC
	return z
}

// Read decodes into p; io.EOF after the final block.
func (z *Reader) Read(p []byte) (int, error) { return z.f.Read(p) }

// Out is the output read so far (counting from the stream's start, a
// resumed reader's mark included); CRC is its CRC-32.
func (z *Reader) Out() int64 { return z.f.out }

// CRC is the CRC-32 (IEEE) of the output read so far.
func (z *Reader) CRC() uint32 { return z.f.crc }

// Marks are the block boundaries passed, oldest first (at most the last
// keepMarks). They are the reader's own: valid until its next Read, which
// may reuse their windows (copy what must outlive it).
func (z *Reader) Marks() []Mark { return z.f.marks }

// mark records the boundary nextBlock is at: every earlier block decoded,
// its output in the dictionary (toRead is empty whenever a step runs).
func (f *decompressor) mark() {
	pending := f.dict.hist[f.dict.rdPos:f.dict.wrPos]
	m := Mark{
		Bit: f.roffset*8 - int64(f.nb),
		Out: f.out + int64(len(pending)),
		CRC: crc32.Update(f.crc, crc32.IEEETable, pending),
	}
	// The oldest mark's window is reused once keepMarks are kept: a copy
	// a block, no garbage (a fresh 32 KiB a block halved the decoder's
	// speed).
	var w []byte
	if len(f.marks) == keepMarks {
		w = f.marks[0].Window[:0]
		f.marks = append(f.marks[:0], f.marks[1:]...)
	}
	d := &f.dict
	if d.full {
		w = append(append(w, d.hist[d.wrPos:]...), d.hist[:d.wrPos]...)
	} else {
		w = append(w, d.hist[:d.wrPos]...)
	}
	m.Window = w
	f.marks = append(f.marks, m)
}
