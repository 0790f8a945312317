package envelope

import "strings"

// The fields' syntax, each the regular expression its comment quotes (the
// published schema's "pattern", events/schema/platform-event.schema.json)
// written out over bytes: every pattern is ASCII-only, so a byte outside
// ASCII never matches, as in the regexp. Hand-written because a
// package-level regexp is compiled by every cold start of every function
// that links this package, and ingest checks these on every event;
// syntax_test.go holds each to its regexp (matchtest).

func lower(c byte) bool    { return 'a' <= c && c <= 'z' }
func digit(c byte) bool    { return '0' <= c && c <= '9' }
func alnum(c byte) bool    { return lower(c) || digit(c) || ('A' <= c && c <= 'Z') }
func hexDigit(c byte) bool { return digit(c) || ('a' <= c && c <= 'f') }

// idSyntax is ^[A-Za-z0-9][A-Za-z0-9._:-]*$.
func idSyntax(s string) bool {
	if s == "" || !alnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '.' && c != '_' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

// tenantSyntax is ^[a-z0-9][a-z0-9_-]{0,63}$.
func tenantSyntax(s string) bool {
	if s == "" || len(s) > 64 || !(lower(s[0]) || digit(s[0])) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !lower(c) && !digit(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// typeSyntax is ^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$: two or more
// dotted words.
func typeSyntax(s string) bool {
	return strings.IndexByte(s, '.') >= 0 && dottedWords(s)
}

// dottedWords is ^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$.
func dottedWords(s string) bool {
	start := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case start:
			if !lower(c) {
				return false
			}
			start = false
		case c == '.':
			start = true
		case !lower(c) && !digit(c) && c != '_':
			return false
		}
	}
	return !start
}

// sourceSyntax is ^[a-z][a-z0-9-]{0,63}$.
func sourceSyntax(s string) bool {
	if s == "" || len(s) > 64 || !lower(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !lower(c) && !digit(c) && c != '-' {
			return false
		}
	}
	return true
}

// traceparentSyntax is
// ^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$.
func traceparentSyntax(s string) bool {
	if len(s) != 55 {
		return false
	}
	for i := range len(s) {
		if i == 2 || i == 35 || i == 52 {
			if s[i] != '-' {
				return false
			}
		} else if !hexDigit(s[i]) {
			return false
		}
	}
	return true
}

// timestampSyntax is RFC 3339's date-time (§5.6): "T" and "Z" in either
// case (its note allows lowercase), a "." before the fraction, hours
// 00-23 (offset too), no leap second (Go's time cannot hold one; the
// schema refuses it the same way). time.Parse alone takes a comma before
// the fraction, offsets like +24:00, and refuses lowercase t and z. As a
// regexp:
//
//	^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$
func timestampSyntax(s string) bool {
	// 2006-01-02T15:04:05, then the fraction, then the zone.
	if len(s) < 20 || !digits(s[0:4]) || s[4] != '-' || !digits(s[5:7]) || s[7] != '-' || !digits(s[8:10]) ||
		(s[10] != 'T' && s[10] != 't') || !hour(s[11:13]) || s[13] != ':' || !sixty(s[14:16]) || s[16] != ':' || !sixty(s[17:19]) {
		return false
	}
	rest := s[19:]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && digit(rest[n]) {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	switch {
	case rest == "Z" || rest == "z":
		return true
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-'):
		return hour(rest[1:3]) && rest[3] == ':' && sixty(rest[4:6])
	}
	return false
}

// digits reports whether s is all ASCII digits.
func digits(s string) bool {
	for i := range len(s) {
		if !digit(s[i]) {
			return false
		}
	}
	return true
}

// hour is ([01][0-9]|2[0-3]) over two bytes.
func hour(s string) bool {
	return (s[0] == '0' || s[0] == '1') && digit(s[1]) || s[0] == '2' && '0' <= s[1] && s[1] <= '3'
}

// sixty is [0-5][0-9] over two bytes.
func sixty(s string) bool { return '0' <= s[0] && s[0] <= '5' && digit(s[1]) }
