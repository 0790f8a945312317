// Package truncate shortens verbose or untrusted strings (SDK errors, operator
// notes, header fragments) to a byte budget before they are stored in an
// item or quoted in an error, without cutting a UTF-8 sequence in half.
package truncate

// String returns s cut to at most n bytes on a rune boundary, with "…"
// appended when anything was cut.
func String(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// Bytes cuts s to at most n bytes, at a rune boundary and without a
// marker: for a value whose stored size is the limit (an excerpt in a
// billed item).
func Bytes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut]
}
