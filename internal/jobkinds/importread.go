package jobkinds

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
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

// gzipStream decodes a gzip file member by member from a member's start,
// remembering where each member began, so a position in the decoded
// stream maps back to (member offset in the file, bytes into the member):
// the checkpoint a later step resumes from with one ranged read.
type gzipStream struct {
	cr      *countingReader
	base    int64 // the file offset cr started at
	zr      *gzip.Reader
	decoded int64
	members []member
	done    bool
}

func newGzipStream(src io.Reader, start int64) (*gzipStream, error) {
	cr := &countingReader{r: bufio.NewReaderSize(src, 256<<10)}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidGzip, err)
	}
	zr.Multistream(false)
	return &gzipStream{cr: cr, base: start, zr: zr, members: []member{{0, start}}}, nil
}

var errInvalidGzip = errors.New("the file is not valid gzip")

func (g *gzipStream) Read(p []byte) (int, error) {
	for {
		if g.done {
			return 0, io.EOF
		}
		n, err := g.zr.Read(p)
		g.decoded += int64(n)
		if errors.Is(err, io.EOF) {
			// The member ended (its CRC and size checked); the next one,
			// if any, starts exactly here.
			at := g.base + g.cr.n
			switch rerr := g.zr.Reset(g.cr); {
			case errors.Is(rerr, io.EOF):
				g.done = true
			case rerr != nil:
				return n, fmt.Errorf("%w: after the member ending at byte %d: %v", errInvalidGzip, at, rerr)
			default:
				g.zr.Multistream(false)
				g.members = append(g.members, member{g.decoded, at})
			}
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

// position maps a decoded-stream position to the checkpoint that resumes
// there: the start of its member in the file and the bytes into it.
func (g *gzipStream) position(decoded int64) (offset, into int64) {
	m := g.members[0]
	for _, x := range g.members {
		if x.decoded <= decoded {
			m = x
		}
	}
	// Members wholly before the position are never needed again.
	return m.compressed, decoded - m.decoded
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
