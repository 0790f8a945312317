package dynamo

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"

	"github.com/siteswarm/eventplatform/internal/kit/zdict"
)

// compressAbove is the size above which an inline payload is stored
// compressed in the ledger item (payloadZ instead of payload). A write
// unit is 1 KB and a ledger item is written twice (transactionally), so
// what counts is whether the item fits in 1 KB: a 5 KiB Stripe event is
// about 600 bytes with the Stripe dictionary (docs/payload-compression.md).
// Smaller payloads stay readable JSON in the table.
const compressAbove = 512

// payloadZ is a dictionary version (one byte, zdict's) followed by the zstd
// frame: the item names the dictionary it needs, so items written before a
// newer dictionary stay readable. payloadGz (gzip) is what items written
// before zstd carry; they are read, never written.

// packPayload is how a payload of source is stored: as is, or compressed
// when that saves at least a fifth.
func packPayload(source string, p []byte) (plain string, z []byte) {
	if len(p) <= compressAbove {
		return string(p), nil
	}
	frame, version, err := zdict.Compress(source, p)
	if err != nil || version > 255 || len(frame)+1 > len(p)*4/5 {
		return string(p), nil
	}
	return "", append([]byte{byte(version)}, frame...)
}

// unpackPayload reverses packPayload, and reads the gzip payloads of items
// written before it.
func unpackPayload(plain string, z, gz []byte) (json.RawMessage, error) {
	switch {
	case len(z) > 0:
		b, err := zdict.Decompress(z[1:], int(z[0]))
		if err != nil {
			return nil, err
		}
		return json.RawMessage(b), nil
	case len(gz) > 0:
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(io.LimitReader(zr, zdict.MaxDecoded+1))
		if err != nil {
			return nil, err
		}
		if len(b) > zdict.MaxDecoded {
			return nil, fmt.Errorf("dynamo: gzip payload inflates past %d bytes", zdict.MaxDecoded)
		}
		return json.RawMessage(b), nil
	case plain == "":
		return nil, nil
	}
	return json.RawMessage(plain), nil
}
