package canonjson

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// EscapeRunes rewrites the non-ASCII characters of a JSON text for which
// escape reports true as \u escapes (a UTF-16 surrogate pair above
// U+FFFF), leaving every other byte as it is. Non-ASCII characters only
// occur inside strings, so the value every JSON parser reads is unchanged;
// ASCII needs no rewriting (a valid text carries no raw control
// characters). Text without such characters is returned as is, without a
// copy. The input must be valid JSON (see Check).
func EscapeRunes(data []byte, escape func(rune) bool) []byte {
	first := -1
	for i := 0; i < len(data); {
		if data[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		if escape(r) {
			first = i
			break
		}
		i += n
	}
	if first < 0 {
		return data
	}
	var b bytes.Buffer
	b.Grow(len(data) + 64)
	b.Write(data[:first])
	for i := first; i < len(data); {
		if data[i] < utf8.RuneSelf {
			b.WriteByte(data[i])
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case !escape(r):
			b.Write(data[i : i+n])
		case r >= 0x10000:
			r1, r2 := utf16.EncodeRune(r)
			writeU(&b, r1)
			writeU(&b, r2)
		default:
			writeU(&b, r)
		}
		i += n
	}
	return b.Bytes()
}

// SQSSafe reports whether a non-ASCII character travels through SQS (and
// the local SQS emulator) as is. SQS accepts #x9, #xA, #xD, #x20–#xD7FF,
// #xE000–#xFFFD and #x10000–#x10FFFF in bodies and attributes; the local
// emulator refuses everything above the BMP, so those characters are
// escaped in AWS as well: what runs locally is what runs in AWS.
func SQSSafe(r rune) bool {
	switch {
	case r == 0x9 || r == 0xA || r == 0xD:
		return true
	case r >= 0x20 && r <= 0xD7FF:
		return true
	case r >= 0xE000 && r <= 0xFFFD:
		return true
	}
	return false
}

// SQSText makes arbitrary text (an error message for a message attribute)
// acceptable to SQS: characters SQS refuses become U+FFFD.
func SQSText(s string) string {
	if !utf8.ValidString(s) {
		return sqsTextSlow(strings.ToValidUTF8(s, "\uFFFD"))
	}
	for _, r := range s {
		if !SQSSafe(r) {
			return sqsTextSlow(s)
		}
	}
	return s
}

func sqsTextSlow(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if !SQSSafe(r) {
			r = utf8.RuneError
		}
		out = append(out, r)
	}
	return string(out)
}
