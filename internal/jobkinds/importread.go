package jobkinds

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/siteswarm/eventplatform/internal/kit/inflate"
)

// ImportObjects is what a file import reads its file through and writes
// its error report with.
type ImportObjects interface {
	// Stat reads the object's size, ETag and version (of versionID when
	// set); a missing object (or version) is ErrNoSuchObject.
	Stat(ctx context.Context, bucket, key, versionID string) (ObjectInfo, error)
	// ReadRange opens bytes [Offset, Offset+Length) of the object, pinned
	// to VersionID (or, unversioned, to ETag): ErrObjectChanged when it is
	// not that version any more.
	ReadRange(ctx context.Context, p RangeParams) (io.ReadCloser, error)
	Put(ctx context.Context, bucket, key string, body []byte) error
}

// Errors of ImportObjects.
var (
	ErrNoSuchObject  = errors.New("no such object")
	ErrObjectChanged = errors.New("the object changed")
)

// ObjectInfo describes an object version.
type ObjectInfo struct {
	Size      int64
	ETag      string
	VersionID string
	// Metadata is the version's user metadata (keys in lower case): a
	// version a subject erasure wrote names it (MetaRewrittenBy).
	Metadata map[string]string
}

// RangeParams name one ranged read.
type RangeParams struct {
	Bucket, Key, VersionID, ETag string
	Offset, Length               int64
}

// rangeChunk is how much one ranged GET asks for: the file is read in
// bounded ranges, never whole, and never more than one range ahead of
// what the step consumes.
const rangeChunk = 8 << 20

// rangeReader reads an object from off to its end in ranged GETs.
type rangeReader struct {
	ctx  context.Context
	obj  ImportObjects
	p    RangeParams
	off  int64
	size int64

	body io.ReadCloser
	left int64 // bytes still due from body
	gets int   // ranged GETs made
}

func (r *rangeReader) Read(p []byte) (int, error) {
	for {
		if r.body == nil {
			if r.off >= r.size {
				return 0, io.EOF
			}
			n := min(int64(rangeChunk), r.size-r.off)
			rp := r.p
			rp.Offset, rp.Length = r.off, n
			body, err := r.obj.ReadRange(r.ctx, rp)
			if err != nil {
				return 0, err
			}
			r.body, r.left = body, n
			r.gets++
		}
		n, err := r.body.Read(p[:min(int64(len(p)), r.left)])
		r.off += int64(n)
		r.left -= int64(n)
		if r.left == 0 || err != nil {
			r.body.Close()
			r.body = nil
			if r.left > 0 && (err == nil || errors.Is(err, io.EOF)) {
				return n, fmt.Errorf("ranged read of %s ended %d bytes early: %w", r.p.Key, r.left, io.ErrUnexpectedEOF)
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return n, err
			}
		}
		if n > 0 {
			return n, nil
		}
	}
}

func (r *rangeReader) Close() error {
	if r.body != nil {
		return r.body.Close()
	}
	return nil
}

// countingReader counts the bytes taken from it; it is an io.ByteReader,
// so gzip/flate read through it without buffering ahead, which leaves it
// positioned exactly after a gzip member when the member ends.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// member is where a gzip member starts: in the decoded stream and in the
// file.
type member struct{ decoded, compressed int64 }

// gzipMark is where a step resumes decoding inside a gzip member without
// decoding the member from its start: a DEFLATE block boundary
// (inflate.Mark) — Bit in the file, Out bytes into the member, the CRC-32
// of those bytes and, compressed, the 32 KiB of output before it that
// later blocks may refer back to.
type gzipMark struct {
	Bit    int64  `json:"bit"`
	Out    int64  `json:"out"`
	CRC    uint32 `json:"crc"`
	Window []byte `json:"window"` // raw DEFLATE of the window
}

func (m gzipMark) mark() (inflate.Mark, error) {
	w, err := io.ReadAll(flate.NewReader(bytes.NewReader(m.Window)))
	if err != nil {
		return inflate.Mark{}, fmt.Errorf("the checkpoint's gzip window: %w", err)
	}
	return inflate.Mark{Bit: m.Bit, Out: m.Out, CRC: m.CRC, Window: w}, nil
}

func checkpointMark(m inflate.Mark) *gzipMark {
	var w bytes.Buffer
	zw, _ := flate.NewWriter(&w, flate.BestSpeed) // a valid level: no error
	_, _ = zw.Write(m.Window)
	_ = zw.Close()
	return &gzipMark{Bit: m.Bit, Out: m.Out, CRC: m.CRC, Window: w.Bytes()}
}

// gzipStream decodes a gzip file (RFC 1952) member by member, remembering
// where each member began and the DEFLATE block boundaries it passes, so
// a position in the decoded stream maps back to a checkpoint a later step
// resumes from with one ranged read: the member's offset in the file, the
// bytes into it and the last block boundary before them (gzipMark). A
// step then decodes at most a block or two it does not need, wherever in
// a member it starts, instead of the member from its start (which made a
// single-stream file's import quadratic: every step decoded everything
// before its place).
type gzipStream struct {
	cr      *countingReader
	base    int64 // the file offset cr started at
	zr      *inflate.Reader
	decoded int64
	members []member
	// marks[i] are member i's block boundaries passed (the last ones).
	marks [][]inflate.Mark
	done  bool
}

// newGzipStream reads from a member's start.
func newGzipStream(src io.Reader, start int64) (*gzipStream, error) {
	g := &gzipStream{cr: &countingReader{r: bufio.NewReaderSize(src, 256<<10)}, base: start}
	more, err := g.next()
	if err != nil {
		return nil, err
	}
	if !more {
		return nil, fmt.Errorf("%w: no gzip member at byte %d", errInvalidGzip, start)
	}
	return g, nil
}

// resumeGzipStream reads from mark m of the member starting at byte
// memberStart; src yields the file from byte m.Bit/8. The decoded stream
// starts at m.Out bytes into the member.
func resumeGzipStream(src io.Reader, memberStart int64, cm gzipMark) (*gzipStream, error) {
	m, err := cm.mark()
	if err != nil {
		return nil, err
	}
	g := &gzipStream{cr: &countingReader{r: bufio.NewReaderSize(src, 256<<10)}, base: m.Bit / 8}
	if g.zr, err = inflate.Resume(g.cr, m); err != nil {
		return nil, fmt.Errorf("%w: resuming at bit %d: %v", errInvalidGzip, m.Bit, err)
	}
	g.members = []member{{-m.Out, memberStart}}
	g.marks = [][]inflate.Mark{nil}
	return g, nil
}

var errInvalidGzip = errors.New("the file is not valid gzip")

// next reads a member's header where the reader is: false at the file's
// end.
func (g *gzipStream) next() (bool, error) {
	at := g.base + g.cr.n
	if _, err := g.cr.r.Peek(1); errors.Is(err, io.EOF) {
		return false, nil
	}
	if err := readGzipHeader(g.cr); err != nil {
		return false, fmt.Errorf("%w: the member at byte %d: %v", errInvalidGzip, at, err)
	}
	g.zr = inflate.NewReader(g.cr, g.base+g.cr.n)
	g.members = append(g.members, member{g.decoded, at})
	g.marks = append(g.marks, nil)
	return true, nil
}

func (g *gzipStream) Read(p []byte) (int, error) {
	for {
		if g.done {
			return 0, io.EOF
		}
		n, err := g.zr.Read(p)
		g.decoded += int64(n)
		g.marks[len(g.marks)-1] = g.zr.Marks()
		if errors.Is(err, io.EOF) {
			// The member's DEFLATE data ended: its trailer checks what was
			// decoded, and the next member, if any, starts right after.
			if terr := g.trailer(); terr != nil {
				return n, terr
			}
			more, herr := g.next()
			if herr != nil {
				return n, herr
			}
			g.done = !more
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			return n, fmt.Errorf("%w: %v", errInvalidGzip, err)
		}
		return n, nil
	}
}

// trailer checks the member's CRC-32 and size (RFC 1952 §2.3.1).
func (g *gzipStream) trailer() error {
	var t [8]byte
	if _, err := io.ReadFull(g.cr, t[:]); err != nil {
		return fmt.Errorf("%w: the member's trailer: %v", errInvalidGzip, noEOF(err))
	}
	if binary.LittleEndian.Uint32(t[:4]) != g.zr.CRC() || binary.LittleEndian.Uint32(t[4:]) != uint32(g.zr.Out()) {
		return fmt.Errorf("%w: the member ending at byte %d fails its checksum", errInvalidGzip, g.base+g.cr.n)
	}
	return nil
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readGzipHeader reads a member header (RFC 1952 §2.3): magic, deflate,
// the optional extra field, name, comment and header CRC.
func readGzipHeader(r *countingReader) error {
	var h [10]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return noEOF(err)
	}
	const fhcrc, fextra, fname, fcomment, reserved = 1 << 1, 1 << 2, 1 << 3, 1 << 4, 0xe0
	if h[0] != 0x1f || h[1] != 0x8b || h[2] != 8 || h[3]&reserved != 0 {
		return errors.New("not a gzip member header (magic 1f 8b, method 8)")
	}
	crc := crc32.ChecksumIEEE(h[:])
	if h[3]&fextra != 0 {
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return noEOF(err)
		}
		extra := make([]byte, binary.LittleEndian.Uint16(l[:]))
		if _, err := io.ReadFull(r, extra); err != nil {
			return noEOF(err)
		}
		crc = crc32.Update(crc32.Update(crc, crc32.IEEETable, l[:]), crc32.IEEETable, extra)
	}
	for _, flag := range []byte{fname, fcomment} {
		if h[3]&flag == 0 {
			continue
		}
		s, err := r.r.ReadSlice(0)
		if err != nil {
			return fmt.Errorf("the header's name or comment: %w", noEOF(err))
		}
		r.n += int64(len(s))
		crc = crc32.Update(crc, crc32.IEEETable, s)
	}
	if h[3]&fhcrc != 0 {
		var c [2]byte
		if _, err := io.ReadFull(r, c[:]); err != nil {
			return noEOF(err)
		}
		if binary.LittleEndian.Uint16(c[:]) != uint16(crc) {
			return errors.New("the header's checksum does not match")
		}
	}
	return nil
}

// position maps a decoded-stream position to the checkpoint that resumes
// there: the start of its member in the file, the bytes into it, and the
// last block boundary of the member at or before them (nil: the member's
// start is as close).
func (g *gzipStream) position(decoded int64) (offset, into int64, mark *gzipMark) {
	k := 0
	for i, x := range g.members {
		if x.decoded <= decoded {
			k = i
		}
	}
	m := g.members[k]
	into = decoded - m.decoded
	var best *inflate.Mark
	for i := range g.marks[k] {
		if mk := &g.marks[k][i]; mk.Out <= into && mk.Out > 0 && (best == nil || mk.Out > best.Out) {
			best = mk
		}
	}
	if best != nil {
		mark = checkpointMark(*best)
	}
	// Members wholly before the position are never needed again.
	return m.compressed, into, mark
}

// compressedRead is how far into the file the decoder has read.
func (g *gzipStream) compressedRead() int64 { return g.base + g.cr.n }

// lineReader splits a decoded stream into lines of at most max bytes,
// counting what it consumed; a longer line is consumed whole and reported
// too long, never held in memory.
type lineReader struct {
	br       *bufio.Reader
	max      int
	consumed int64
	buf      []byte
}

// next returns the next line without its line end (LF or CRLF), the bytes
// it took, and whether it was longer than max (then line is nil). At the
// end of the stream it returns io.EOF.
func (l *lineReader) next() (line []byte, n int64, tooLong bool, err error) {
	l.buf = l.buf[:0]
	for {
		chunk, rerr := l.br.ReadSlice('\n')
		n += int64(len(chunk))
		if !tooLong {
			if len(l.buf)+len(chunk) > l.max+2 { // +2: the line end is not the line's
				tooLong, l.buf = true, l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		switch {
		case errors.Is(rerr, bufio.ErrBufferFull):
			continue
		case rerr != nil && !errors.Is(rerr, io.EOF):
			return nil, n, false, rerr
		case errors.Is(rerr, io.EOF) && n == 0:
			return nil, 0, false, io.EOF
		}
		l.consumed += n
		if tooLong {
			return nil, n, true, nil
		}
		line = l.buf
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
		}
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) > l.max {
			return nil, n, true, nil
		}
		return line, n, false, nil
	}
}
