package dynamo

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
)

// compressAbove is the size above which an inline payload is stored
// gzip-compressed in the ledger item (payloadGz instead of payload). A
// write unit is 1 KB and a ledger item is written twice (transactionally):
// a 5 KiB Stripe event compresses to about a quarter, the largest single
// saving in what an event costs (docs/cost.md). Smaller payloads stay
// readable JSON in the table.
const compressAbove = 1024

// packPayload is how a payload is stored: as is, or compressed when that
// saves at least a fifth.
func packPayload(p []byte) (plain string, gz []byte) {
	if len(p) <= compressAbove {
		return string(p), nil
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(p)
	if err := zw.Close(); err != nil || buf.Len() > len(p)*4/5 {
		return string(p), nil
	}
	return "", buf.Bytes()
}

// unpackPayload reverses packPayload.
func unpackPayload(plain string, gz []byte) (json.RawMessage, error) {
	if len(gz) == 0 {
		if plain == "" {
			return nil, nil
		}
		return json.RawMessage(plain), nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(zr, 8<<20))
	if err != nil {
		return nil, err
	}
	return json.RawMessage(b), nil
}
