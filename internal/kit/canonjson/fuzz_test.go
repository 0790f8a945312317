package canonjson_test

import (
	"encoding/json"
	"testing"

	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
)

// FuzzCanonical: Check never panics and agrees with encoding/json on
// validity (except for what it refuses on purpose); the canonical form is a
// fixed point that encoding/json reads as the same value; escaping for SQS
// never changes the canonical form.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, `{"b":[1,2,{"c":"é\u00e9"}],"a":-0.5e-3}`, `{"a":"\ud800"}`, `[]`, `"x"`, `1e999999999999`,
		"{\"a\":\"\uFFFE😀\"}", `{"a":1,"a":2}`, "{\"a\":\"\xff\"}", `[[[[[[]]]]]]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := canonjson.Check(data, 32)
		if err == nil && !json.Valid(data) {
			t.Fatalf("Check accepts what encoding/json refuses: %q", data)
		}
		if err != nil {
			if json.Valid(data) && canonjson.IsKind(err, canonjson.KindSyntax) {
				t.Fatalf("Check refuses valid JSON as a syntax error: %q: %v", data, err)
			}
			return
		}
		c1, err := canonjson.Canonical(data)
		if err != nil {
			t.Fatalf("Canonical fails on a checked text: %v", err)
		}
		c2, err := canonjson.Canonical(c1)
		if err != nil || string(c1) != string(c2) {
			t.Fatalf("canonical form is not a fixed point: %q -> %q (%v)", c1, c2, err)
		}
		if !json.Valid(c1) {
			t.Fatalf("canonical form is not JSON: %q", c1)
		}
		esc := canonjson.EscapeRunes(data, func(r rune) bool { return !canonjson.SQSSafe(r) })
		c3, err := canonjson.Canonical(esc)
		if err != nil || string(c3) != string(c1) {
			t.Fatalf("escaping changed the value: %q -> %q (%v)", data, esc, err)
		}
	})
}
