package canonjson

import (
	"bytes"
	"math/big"
	"slices"
	"strings"
	"unicode/utf8"
)

// Canonical returns the canonical form of a strict JSON value (see Check):
// object members sorted by name (byte order of their decoded UTF-8), no
// insignificant whitespace, strings with one escaping (`"`, `\` and
// control characters escaped, everything else raw; a lone surrogate escape
// kept as \uXXXX), and numbers normalised to their exact decimal value
// (`1.50`, `15e-1` and `1.5E0` are all `15e-1`; `100` is `1e2`; `-0` is
// `0`). Two texts have the same canonical form exactly when every JSON
// parser reads them as the same value, so it is what content hashes are
// computed over. It is a hashing form, not meant for display.
func Canonical(data []byte) ([]byte, error) {
	v, err := parse(data, DefaultMaxDepth)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(data))
	writeCanonical(&b, v)
	return b.Bytes(), nil
}

func writeCanonical(b *bytes.Buffer, v value) {
	switch v.kind {
	case 'o':
		ms := slices.Clone(v.members)
		slices.SortFunc(ms, func(x, y member) int { return strings.Compare(x.name, y.name) })
		b.WriteByte('{')
		for i, m := range ms {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, m.name)
			b.WriteByte(':')
			writeCanonical(b, m.val)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, e := range v.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case 's':
		writeString(b, v.str)
	case 'n':
		b.WriteString(normalNumber(v.str))
	case 't':
		b.WriteString("true")
	case 'f':
		b.WriteString("false")
	case 'z':
		b.WriteString("null")
	}
}

const hexDigits = "0123456789abcdef"

func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
			i++
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xF])
			i++
		case c == 0xED && i+2 < len(s) && s[i+1] >= 0xA0:
			// WTF-8 of a lone surrogate (see value): write it escaped.
			r := rune(c&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
			writeU(b, r)
			i += 3
		default:
			_, n := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+n])
			i += n
		}
	}
	b.WriteByte('"')
}

func writeU(b *bytes.Buffer, r rune) {
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[(r>>shift)&0xF])
	}
}

// normalNumber is the exact decimal value of a JSON number literal as
// <digits>[e<exponent>], digits without leading or trailing zeros.
func normalNumber(lit string) string {
	neg := strings.HasPrefix(lit, "-")
	lit = strings.TrimPrefix(lit, "-")
	mant, exp, _ := strings.Cut(strings.ToLower(lit), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return "0"
	}
	e := new(big.Int)
	if exp != "" {
		e.SetString(strings.TrimPrefix(exp, "+"), 10)
	}
	e.Sub(e, big.NewInt(int64(len(frac))))
	trimmed := strings.TrimRight(digits, "0")
	e.Add(e, big.NewInt(int64(len(digits)-len(trimmed))))
	out := trimmed
	if neg {
		out = "-" + out
	}
	if e.Sign() != 0 {
		out += "e" + e.String()
	}
	return out
}
