package table

import (
	"strings"
	"unicode/utf8"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

// ItemSize is an item's size by DynamoDB's rules: for each attribute, the
// UTF-8 length of its name plus the size of its value
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
func ItemSize(item map[string]ddbtypes.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + ValueSize(v)
	}
	return n
}

// ValueSize is one value's size: strings and binaries their bytes, numbers
// one byte per two significant digits plus one, booleans and nulls one
// byte, lists and maps three bytes plus one per element plus the elements
// (and, in a map, their names), sets the sum of their elements.
func ValueSize(v ddbtypes.AttributeValue) int {
	switch v := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return len(v.Value)
	case *ddbtypes.AttributeValueMemberN:
		return NumberSize(v.Value)
	case *ddbtypes.AttributeValueMemberB:
		return len(v.Value)
	case *ddbtypes.AttributeValueMemberBOOL, *ddbtypes.AttributeValueMemberNULL:
		return 1
	case *ddbtypes.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + ValueSize(e)
		}
		return n
	case *ddbtypes.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + ValueSize(e)
		}
		return n
	case *ddbtypes.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *ddbtypes.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += NumberSize(s)
		}
		return n
	case *ddbtypes.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	}
	return 0
}
