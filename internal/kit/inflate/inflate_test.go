package inflate_test

import (
	"bufio"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/inflate"
)

// ndjson is about n bytes of lines that compress as real exports do:
// repeated structure, varying ids and numbers.
func ndjson(n int) []byte {
	rng := rand.New(rand.NewPCG(7, 9))
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"id":"evt_%016x","type":"invoice.paid","created":%d,"customer":"cus_%08x","amount":%d}`+"\n",
			rng.Uint64(), 1764600000+i, rng.IntN(5000), rng.IntN(100000))
	}
	return b.Bytes()
}

// Decoding from any mark gives exactly the rest of the output, with the
// CRC-32 of the whole, at every compression level (stored, Huffman-only,
// fixed and dynamic blocks): what a file import's later step relies on.
func TestResumeAtAnyMarkGivesTheRest(t *testing.T) {
	t.Parallel()
	raw := ndjson(3 << 20)
	for _, level := range []int{flate.NoCompression, flate.HuffmanOnly, flate.BestSpeed, flate.DefaultCompression, flate.BestCompression} {
		t.Run(fmt.Sprint(level), func(t *testing.T) {
			t.Parallel()
			var z bytes.Buffer
			w, err := flate.NewWriter(&z, level)
			require.NoError(t, err)
			_, err = w.Write(raw)
			require.NoError(t, err)
			require.NoError(t, w.Close())
			comp := append(z.Bytes(), "trailer"...) // what follows the stream is not read

			// Decode in small reads, keeping every mark passed.
			in := bytes.NewReader(comp)
			r := inflate.NewReader(in, 0)
			var out bytes.Buffer
			var marks []inflate.Mark
			buf := make([]byte, 4096)
			for {
				n, err := r.Read(buf)
				out.Write(buf[:n])
				for _, m := range r.Marks() {
					if len(marks) == 0 || m.Bit > marks[len(marks)-1].Bit {
						require.LessOrEqual(t, m.Out, int64(out.Len())+int64(len(buf))*8, "a mark is never far ahead of what was read")
						m.Window = bytes.Clone(m.Window) // the reader reuses it
						marks = append(marks, m)
					}
				}
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
			}
			require.Equal(t, raw, out.Bytes())
			require.Equal(t, crc32.ChecksumIEEE(raw), r.CRC())
			require.Equal(t, int64(len(raw)), r.Out())
			rest, err := io.ReadAll(in)
			require.NoError(t, err)
			require.Equal(t, "trailer", string(rest), "read exactly to the stream's end")
			require.Greater(t, len(marks), 10, "a 3 MiB stream has many blocks")

			for i, m := range marks {
				if i%7 != 0 && i != len(marks)-1 {
					continue
				}
				require.LessOrEqual(t, len(m.Window), 1<<15)
				require.True(t, bytes.Equal(raw[max(0, m.Out-int64(len(m.Window))):m.Out], m.Window), "mark %d: the window is the output before it", i)
				require.Equal(t, min(m.Out, 1<<15), int64(len(m.Window)), "mark %d: 32 KiB of history, or all of it", i)
				require.Equal(t, crc32.ChecksumIEEE(raw[:m.Out]), m.CRC)
				rr, err := inflate.Resume(bufio.NewReader(bytes.NewReader(comp[m.Bit/8:])), m)
				require.NoError(t, err)
				got, err := io.ReadAll(rr)
				require.NoError(t, err, "mark %d", i)
				require.Equal(t, raw[m.Out:], got, "mark %d (bit %d, out %d)", i, m.Bit, m.Out)
				require.Equal(t, crc32.ChecksumIEEE(raw), rr.CRC(), "mark %d", i)
				require.Equal(t, int64(len(raw)), rr.Out())
			}
		})
	}
}

// A corrupt stream is an error, not a panic or a wrong answer.
func TestCorruptStreamIsAnError(t *testing.T) {
	t.Parallel()
	_, err := io.ReadAll(inflate.NewReader(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}), 0))
	require.Error(t, err)
	_, err = io.ReadAll(inflate.NewReader(bytes.NewReader(nil), 0))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}
