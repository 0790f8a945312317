package localaws

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// MaxItemSize is DynamoDB's item size limit (400 KB, attribute names
// included). minidyn stores items of any size, so without this check a
// payload that would be rejected in production (and must be claim-checked
// to S3 instead) passes locally.
const MaxItemSize = 400 * 1024

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

// numberSize is ceil(significant digits / 2) + 1: DynamoDB stores numbers
// as variable-length decimals with leading and trailing zeros trimmed.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.ReplaceAll(s, ".", "")
	s = strings.Trim(s, "0")
	digits := utf8.RuneCountInString(s)
	if digits == 0 {
		digits = 1
	}
	return (digits+1)/2 + 1
}

// binarySize is the decoded length of a base64 wire binary.
func binarySize(s string) int {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return len(b)
	}
	return base64.StdEncoding.DecodedLen(len(s))
}
