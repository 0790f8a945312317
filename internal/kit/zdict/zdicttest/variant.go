// Package zdicttest makes realistic variants of sample events for training
// and judging compression dictionaries: every identifier, amount,
// timestamp and free-text value replaced, the shape and the enumerations
// kept, so a dictionary is judged on events it has never seen.
package zdicttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Samples reads every *.json file of dir, by name.
func Samples(dir string) (map[string][]byte, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = b
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("zdicttest: no samples in %s", dir)
	}
	return out, nil
}

// Names are the keys of samples, sorted.
func Names(samples map[string][]byte) []string {
	names := make([]string, 0, len(samples))
	for n := range samples {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Variant rewrites a JSON document (a Stripe event as Stripe sends it:
// two-space indentation, keys in their order) with new values drawn from
// r, keeping its shape:
//
//   - identifiers (prefix_body) get a new body of the same length; an
//     identifier seen twice gets the same new body both times, and the
//     account segment Stripe embeds in its long ids is one new segment per
//     variant, as in events of one account;
//   - free text (names, e-mail addresses, descriptions, URLs) gets new
//     letters and digits of the same length;
//   - timestamps move by one offset per variant plus a little jitter,
//     amounts and counts get new values; zero, booleans, null, enumerations
//     ("usd", "card", "charge_automatically") and the event type stay.
func Variant(doc []byte, r *rand.Rand) ([]byte, error) {
	v := &variant{r: r, ids: map[string]string{}, account: randomString(r, 10, alnum), shift: int64(r.IntN(90 * 86400))}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out bytes.Buffer
	if err := v.value(dec, &out, "", 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("zdicttest: trailing data after the document")
	}
	if bytes.HasSuffix(bytes.TrimRight(doc, " \t"), []byte("\n")) {
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

const (
	alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	lower  = "abcdefghijklmnopqrstuvwxyz"
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digits = "0123456789"
)

// idPattern matches Stripe-style identifiers, alone or inside a URL.
var idPattern = regexp.MustCompile(`\b([a-z]+(?:_[a-z]+)?_)([A-Za-z0-9]{8,})\b`)

type variant struct {
	r       *rand.Rand
	ids     map[string]string
	account string
	shift   int64
}

func randomString(r *rand.Rand, n int, from string) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = from[r.IntN(len(from))]
	}
	return string(b)
}

func (v *variant) id(prefix, body string) string {
	key := prefix + body
	if m, ok := v.ids[key]; ok {
		return m
	}
	var nb string
	if len(body) == 24 && body[0] >= '0' && body[0] <= '9' {
		// A digit, five time-ordered characters, the account's ten, eight.
		nb = body[:1] + randomString(v.r, 5, alnum) + v.account + randomString(v.r, 8, alnum)
	} else {
		nb = randomString(v.r, len(body), alnum)
	}
	v.ids[key] = prefix + nb
	return prefix + nb
}

// enumKeys hold schema values, never data.
var enumKeys = map[string]bool{"type": true, "object": true, "api_version": true, "currency": true, "status": true}

func (v *variant) text(key, s string) string {
	if enumKeys[key] {
		return s
	}
	s = idPattern.ReplaceAllStringFunc(s, func(m string) string {
		sub := idPattern.FindStringSubmatch(m)
		if strings.Trim(sub[2], lower) == "" {
			return m // a word such as charge_automatically, not an id
		}
		return v.id(sub[1], sub[2])
	})
	free := !strings.HasPrefix(s, "http") && !strings.HasPrefix(s, "/") &&
		(strings.ContainsAny(s, " @") || key == "name" || key == "email" || key == "phone")
	allDigits := s != "" && strings.Trim(s, digits) == ""
	switch {
	case allDigits:
		return v.digitsLike(s)
	case free:
		var b strings.Builder
		for _, c := range s {
			switch {
			case c >= 'a' && c <= 'z':
				b.WriteByte(lower[v.r.IntN(26)])
			case c >= 'A' && c <= 'Z':
				b.WriteByte(upper[v.r.IntN(26)])
			case c >= '0' && c <= '9':
				b.WriteByte(digits[v.r.IntN(10)])
			default:
				b.WriteRune(c)
			}
		}
		return b.String()
	}
	return s
}

func (v *variant) digitsLike(s string) string {
	b := []byte(randomString(v.r, len(s), digits))
	if len(b) > 1 && b[0] == '0' {
		b[0] = '1' + byte(v.r.IntN(9))
	}
	return string(b)
}

func (v *variant) number(n json.Number) string {
	i, err := n.Int64()
	if err != nil {
		return n.String() // a fraction: keep
	}
	switch {
	case i == 0:
		return "0"
	case i > 1_500_000_000 && i < 2_000_000_000:
		return fmt.Sprint(i + v.shift + int64(v.r.IntN(120)))
	case i > 0:
		return fmt.Sprint(1 + v.r.Int64N(3*i+10))
	}
	return n.String()
}

// value copies one JSON value from dec to out, pretty-printed the way
// json.MarshalIndent(v, "", "  ") does.
func (v *variant) value(dec *json.Decoder, out *bytes.Buffer, key string, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		closer := map[json.Delim]byte{'{': '}', '[': ']'}[t]
		out.WriteByte(byte(t))
		n := 0
		for dec.More() {
			if n > 0 {
				out.WriteByte(',')
			}
			out.WriteByte('\n')
			out.WriteString(strings.Repeat("  ", depth+1))
			childKey := key
			if t == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				childKey = k.(string)
				kb, _ := json.Marshal(childKey)
				out.Write(kb)
				out.WriteString(": ")
			}
			if err := v.value(dec, out, childKey, depth+1); err != nil {
				return err
			}
			n++
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		if n > 0 {
			out.WriteByte('\n')
			out.WriteString(strings.Repeat("  ", depth))
		}
		out.WriteByte(closer)
	case string:
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v.text(key, t)); err != nil {
			return err
		}
		out.Truncate(out.Len() - 1) // Encode's newline
	case json.Number:
		out.WriteString(v.number(t))
	case bool:
		fmt.Fprint(out, t)
	case nil:
		out.WriteString("null")
	}
	return nil
}
