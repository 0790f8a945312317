// Package matchtest holds a hand-written matcher to the regular expression
// it replaces. The platform validates names and ids with small functions
// over bytes instead of package-level regexps (a regexp compiled at init
// is paid by every cold start of every function that links the package);
// each keeps its regexp here, in its tests, as the oracle: the two must
// agree on every string Strings generates and on the fuzzer's.
package matchtest

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// Case is a matcher and the pattern it stands for.
type Case struct {
	// Name names the case's subtest.
	Name string
	// Pattern is the regular expression (Go syntax) Match must agree with.
	Pattern string
	// Match is the hand-written matcher.
	Match func(string) bool
	// Samples are strings the pattern accepts: the generated set is built
	// around them (every one-byte edit, prefixes, suffixes, repetitions,
	// splices), so they should cover the pattern's shapes and include one
	// of its longest accepted length where it bounds one.
	Samples []string
}

// units are what Strings inserts and substitutes: every ASCII byte, bytes
// that cannot start or stand alone in UTF-8, and multi-byte runes
// (including U+FFFD, which is what the regexp engine reads an invalid byte
// as, and runes whose case folding lands in ASCII).
var units = func() []string {
	u := make([]string, 0, 140)
	for b := range 128 {
		u = append(u, string(rune(b)))
	}
	return append(u, "\x80", "\xc3", "\xff", "é", "€", "😀", "\uFFFD", "\u212A", "ſ", "İ", "\u00a0")
}()

// Strings is the generated set for samples: the empty string, every byte
// and the multi-byte units alone, and for each sample itself, its
// prefixes and suffixes, every unit inserted at and substituted for every
// position, every byte deleted, its first and last byte repeated to 260
// bytes, and it doubled; then seeded random strings over the samples'
// bytes and separators, and random splices of the samples' pieces.
func Strings(samples ...string) []string {
	out := []string{""}
	for b := range 256 {
		out = append(out, string([]byte{byte(b)}))
	}
	out = append(out, units[128:]...)
	longest := 0
	for _, s := range samples {
		longest = max(longest, len(s))
		out = append(out, s, s+s)
		for i := range len(s) + 1 {
			out = append(out, s[:i], s[i:])
			for _, u := range units {
				out = append(out, s[:i]+u+s[i:])
				if i < len(s) {
					out = append(out, s[:i]+u+s[i+1:])
				}
			}
			if i < len(s) {
				out = append(out, s[:i]+s[i+1:])
			}
		}
		if s != "" {
			for n := len(s) + 1; n <= 260; n++ {
				out = append(out, s+strings.Repeat(s[len(s)-1:], n-len(s)), strings.Repeat(s[:1], n-len(s))+s)
			}
		}
	}
	alphabet := []string{".", "-", "_", "/", ":", "*", "+", " ", "A", "Z", "a", "z", "0", "9", "é", "\xff"}
	for _, s := range samples {
		for i := range len(s) {
			alphabet = append(alphabet, s[i:i+1])
		}
	}
	r := rand.New(rand.NewPCG(37, 2))
	for range 3000 {
		var b strings.Builder
		for range r.IntN(longest + 4) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		out = append(out, b.String())
	}
	if len(samples) > 0 {
		for range 3000 {
			var b strings.Builder
			for range 1 + r.IntN(4) {
				s := samples[r.IntN(len(samples))]
				i := r.IntN(len(s) + 1)
				j := i + r.IntN(len(s)-i+1)
				b.WriteString(s[i:j])
				if r.IntN(3) == 0 {
					b.WriteString(alphabet[r.IntN(len(alphabet))])
				}
			}
			out = append(out, b.String())
		}
	}
	return out
}

// Agree fails t where c.Match and c.Pattern disagree on a string of
// Strings(c.Samples), or where the pattern refuses a sample.
func Agree(t *testing.T, c Case) {
	t.Helper()
	re := regexp.MustCompile(c.Pattern)
	for _, s := range c.Samples {
		if !re.MatchString(s) {
			t.Fatalf("%s refuses its sample %q", c.Pattern, s)
		}
	}
	var wrong []string
	accepted := 0
	all := Strings(c.Samples...)
	for _, s := range all {
		want := re.MatchString(s)
		if want {
			accepted++
		}
		if c.Match(s) != want && len(wrong) < 20 {
			wrong = append(wrong, s)
		}
	}
	for _, s := range wrong {
		t.Errorf("%q: %s says %v, the matcher %v", s, c.Pattern, re.MatchString(s), !re.MatchString(s))
	}
	if accepted <= len(c.Samples) || accepted == len(all) {
		t.Errorf("%s accepted %d of %d generated strings: the set does not exercise both answers", c.Pattern, accepted, len(all))
	}
}

// AgreeAll runs Agree for each case as a parallel subtest named after it.
func AgreeAll(t *testing.T, cases ...Case) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			Agree(t, c)
		})
	}
}

// Seeds are the fuzz seeds for samples: the empty string, the samples,
// and each with a separator or a non-ASCII byte put at its start and end
// and after its first byte, and doubled.
func Seeds(samples ...string) []string {
	out := []string{""}
	for _, s := range samples {
		out = append(out, s)
		for _, u := range []string{".", "-", "_", "/", ":", "A", "é", "\xff", "\n"} {
			out = append(out, u+s, s+u, s+u+u)
			if s != "" {
				out = append(out, s[:1]+u+s[1:], s[:1]+u+u+s[1:])
			}
		}
	}
	return out
}

// Fuzz is a fuzz target's body: it seeds f with every case's Seeds and
// checks each case's matcher against its pattern on every input (the
// seeds run in go test; go test -fuzz searches further).
func Fuzz(f *testing.F, cases ...Case) {
	res := make([]*regexp.Regexp, len(cases))
	for i, c := range cases {
		res[i] = regexp.MustCompile(c.Pattern)
		for _, s := range Seeds(c.Samples...) {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, c := range cases {
			if want := res[i].MatchString(s); c.Match(s) != want {
				t.Errorf("%s: %q: %s says %v, the matcher %v", c.Name, s, c.Pattern, want, !want)
			}
		}
	})
}
