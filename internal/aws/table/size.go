package table

import (
	"strings"
	"unicode/utf8"
)

// MaxItemSize is DynamoDB's item size limit (400 KB, attribute names
// included).
const MaxItemSize = 400 * 1024

// NumberSize is a number's size in an item by DynamoDB's rules: one byte
// per two significant digits, plus one (leading and trailing zeros are
// not stored). The emulator's size check and the cost model share it.
func NumberSize(s string) int {
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
