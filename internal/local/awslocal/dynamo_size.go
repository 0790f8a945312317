package awslocal

import (
	"encoding/base64"

	"github.com/siteswarm/eventplatform/internal/aws/table"
)

// MaxItemSize is DynamoDB's item size limit. minidyn stores items of any
// size, so without this check a payload that would be rejected in
// production (and must be claim-checked to S3 instead) passes locally.
const MaxItemSize = table.MaxItemSize

// ItemSize approximates DynamoDB's item size of an item in wire JSON form
// (the decoded "Item" map of a PutItem request), following the documented
// rules: names and strings count their UTF-8 bytes, binaries their raw bytes,
// numbers one byte per two significant digits plus one, booleans and nulls
// one byte, lists and maps 3 bytes plus one byte per element.
func ItemSize(item map[string]any) int {
	n := 0
	for name, v := range item {
		n += len(name) + attrSize(v)
	}
	return n
}

func attrSize(v any) int {
	av, ok := v.(map[string]any)
	if !ok {
		return 0
	}
	n := 0
	for typ, val := range av {
		switch typ {
		case "S":
			s, _ := val.(string)
			n += len(s)
		case "N":
			s, _ := val.(string)
			n += numberSize(s)
		case "B":
			s, _ := val.(string)
			n += binarySize(s)
		case "BOOL", "NULL":
			n++
		case "SS", "NS", "BS":
			list, _ := val.([]any)
			for _, e := range list {
				s, _ := e.(string)
				switch typ {
				case "SS":
					n += len(s)
				case "NS":
					n += numberSize(s)
				default:
					n += binarySize(s)
				}
			}
		case "L":
			n += 3
			list, _ := val.([]any)
			for _, e := range list {
				n += attrSize(e) + 1
			}
		case "M":
			n += 3
			m, _ := val.(map[string]any)
			for k, e := range m {
				n += len(k) + attrSize(e) + 1
			}
		}
	}
	return n
}

func numberSize(s string) int { return table.NumberSize(s) }

// binarySize is the decoded length of a base64 wire binary.
func binarySize(s string) int {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return len(b)
	}
	return base64.StdEncoding.DecodedLen(len(s))
}
