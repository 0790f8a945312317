package canonjson

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind classifies a refusal.
type Kind int

const (
	// KindSyntax: not a single well-formed JSON value.
	KindSyntax Kind = iota + 1
	// KindInvalidUTF8: bytes that are not UTF-8 (JSON text must be).
	KindInvalidUTF8
	// KindDuplicateKey: an object names a member twice (compared after
	// unescaping, so "a" and "\u0061" are the same name).
	KindDuplicateKey
	// KindTooDeep: objects and arrays nest deeper than the limit.
	KindTooDeep
)

// Error is a refused document: what is wrong, where (a path such as
// `payload.items[3]`, "" for the top level) and the byte offset.
type Error struct {
	Kind   Kind
	Path   string
	Offset int
	Msg    string
}

func (e *Error) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("%s (at %s, byte %d)", e.Msg, e.Path, e.Offset)
	}
	return fmt.Sprintf("%s (byte %d)", e.Msg, e.Offset)
}

// DefaultMaxDepth bounds nesting when a caller does not choose (deep
// documents are a denial-of-service vector for recursive parsers
// downstream, which is where they would fail: at a subscriber).
const DefaultMaxDepth = 128

// Check reports whether data is exactly one strict JSON value nested at most
// maxDepth levels (the top-level object or array is level 1; <= 0 means
// DefaultMaxDepth). The error is always an *Error.
func Check(data []byte, maxDepth int) error {
	_, err := parse(data, maxDepth)
	return err
}

// IsKind reports whether err is a refusal of that kind.
func IsKind(err error, k Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}

// value is a parsed JSON value. Strings hold their decoded bytes (a lone
// surrogate escape is kept as its 3-byte WTF-8 form, which no valid UTF-8
// input can produce, so distinct texts stay distinct); numbers hold their
// literal.
type value struct {
	kind    byte // 'o' object, 'a' array, 's' string, 'n' number, 't' true, 'f' false, 'z' null
	str     string
	members []member
	elems   []value
}

type member struct {
	name string
	val  value
}

type parser struct {
	data     []byte
	pos      int
	maxDepth int
	path     []string
}

func parse(data []byte, maxDepth int) (value, error) {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return value{}, &Error{Kind: KindInvalidUTF8, Offset: off, Msg: "text is not valid UTF-8", Path: pathAt(data, off)}
	}
	p := &parser{data: data, maxDepth: maxDepth}
	p.ws()
	v, err := p.value(0)
	if err != nil {
		return value{}, err
	}
	p.ws()
	if p.pos != len(p.data) {
		return value{}, p.fail(KindSyntax, "unexpected data after the JSON value")
	}
	return v, nil
}

func (p *parser) fail(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Offset: p.pos, Path: joinPath(p.path), Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (value, error) {
	if p.pos >= len(p.data) {
		return value{}, p.fail(KindSyntax, "unexpected end of JSON")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.string()
		return value{kind: 's', str: s}, err
	case c == '-' || c >= '0' && c <= '9':
		n, err := p.number()
		return value{kind: 'n', str: n}, err
	case c == 't':
		return value{kind: 't'}, p.literal("true")
	case c == 'f':
		return value{kind: 'f'}, p.literal("false")
	case c == 'n':
		return value{kind: 'z'}, p.literal("null")
	}
	return value{}, p.fail(KindSyntax, "invalid character %q looking for a value", p.data[p.pos])
}

func (p *parser) literal(lit string) error {
	if !strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+len(lit))]), lit) {
		return p.fail(KindSyntax, "invalid literal (want %s)", lit)
	}
	p.pos += len(lit)
	return nil
}

func (p *parser) object(depth int) (value, error) {
	if depth > p.maxDepth {
		return value{}, p.fail(KindTooDeep, "nesting is deeper than %d levels", p.maxDepth)
	}
	p.pos++ // {
	v := value{kind: 'o'}
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	seen := map[string]bool{}
	for {
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return value{}, p.fail(KindSyntax, "expected a member name")
		}
		start := p.pos
		name, err := p.string()
		if err != nil {
			return value{}, err
		}
		if seen[name] {
			p.pos = start
			return value{}, p.fail(KindDuplicateKey, "member %q appears more than once", printable(name))
		}
		seen[name] = true
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return value{}, p.fail(KindSyntax, "expected ':' after a member name")
		}
		p.pos++
		p.ws()
		p.path = append(p.path, "."+printable(name))
		mv, err := p.value(depth)
		p.path = p.path[:len(p.path)-1]
		if err != nil {
			return value{}, err
		}
		v.members = append(v.members, member{name: name, val: mv})
		p.ws()
		if p.pos >= len(p.data) {
			return value{}, p.fail(KindSyntax, "unexpected end of JSON in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return v, nil
		default:
			return value{}, p.fail(KindSyntax, "expected ',' or '}' in an object")
		}
	}
}

func (p *parser) array(depth int) (value, error) {
	if depth > p.maxDepth {
		return value{}, p.fail(KindTooDeep, "nesting is deeper than %d levels", p.maxDepth)
	}
	p.pos++ // [
	v := value{kind: 'a'}
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for i := 0; ; i++ {
		p.ws()
		p.path = append(p.path, "["+strconv.Itoa(i)+"]")
		ev, err := p.value(depth)
		p.path = p.path[:len(p.path)-1]
		if err != nil {
			return value{}, err
		}
		v.elems = append(v.elems, ev)
		p.ws()
		if p.pos >= len(p.data) {
			return value{}, p.fail(KindSyntax, "unexpected end of JSON in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return v, nil
		default:
			return value{}, p.fail(KindSyntax, "expected ',' or ']' in an array")
		}
	}
}

// string decodes a string token starting at the opening quote.
func (p *parser) string() (string, error) {
	p.pos++ // opening quote
	var b strings.Builder
	for {
		if p.pos >= len(p.data) {
			return "", p.fail(KindSyntax, "unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c < 0x20:
			return "", p.fail(KindSyntax, "control character 0x%02x in a string (escape it)", c)
		case c == '\\':
			if err := p.escape(&b); err != nil {
				return "", err
			}
		default:
			// Copy the run up to the next quote, backslash or control.
			start := p.pos
			for p.pos < len(p.data) {
				d := p.data[p.pos]
				if d == '"' || d == '\\' || d < 0x20 {
					break
				}
				p.pos++
			}
			b.Write(p.data[start:p.pos])
		}
	}
}

func (p *parser) escape(b *strings.Builder) error {
	if p.pos+1 >= len(p.data) {
		return p.fail(KindSyntax, "unterminated escape")
	}
	c := p.data[p.pos+1]
	if r, ok := simpleEscape(c); ok {
		b.WriteByte(r)
		p.pos += 2
		return nil
	}
	if c != 'u' {
		return p.fail(KindSyntax, "invalid escape \\%c", c)
	}
	r1, ok := p.hex4(p.pos + 2)
	if !ok {
		return p.fail(KindSyntax, "invalid \\u escape")
	}
	p.pos += 6
	if utf16.IsSurrogate(r1) && r1 < 0xDC00 && p.pos+6 <= len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
		if r2, ok := p.hex4(p.pos + 2); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
			b.WriteRune(utf16.DecodeRune(r1, r2))
			p.pos += 6
			return nil
		}
	}
	if utf16.IsSurrogate(r1) {
		// A lone surrogate: keep it distinct from U+FFFD (WTF-8 bytes).
		b.Write([]byte{0xED, byte(0xA0 | (r1>>6)&0x1F), byte(0x80 | r1&0x3F)})
		return nil
	}
	b.WriteRune(r1)
	return nil
}

func simpleEscape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

func (p *parser) hex4(at int) (rune, bool) {
	if at+4 > len(p.data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.data[at:at+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}

// number validates a number token and returns its literal.
func (p *parser) number() (string, error) {
	start := p.pos
	d := p.data
	i := p.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return "", p.fail(KindSyntax, "invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return "", p.fail(KindSyntax, "invalid number: digits must follow '.'")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return "", p.fail(KindSyntax, "invalid number: digits must follow the exponent")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	p.pos = i
	return string(d[start:i]), nil
}

func joinPath(parts []string) string {
	s := strings.Join(parts, "")
	return strings.TrimPrefix(s, ".")
}

// pathAt is the path of an offset when the text could not be parsed (an
// invalid UTF-8 byte): the members open at that point, best effort.
func pathAt(data []byte, off int) string {
	p := &parser{data: data[:off], maxDepth: DefaultMaxDepth}
	p.ws()
	// Parsing the prefix fails at its end; the path then is where it was.
	_, err := p.value(0)
	var e *Error
	if errors.As(err, &e) {
		return e.Path
	}
	return ""
}

// printable renders a member name for paths and messages.
func printable(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
