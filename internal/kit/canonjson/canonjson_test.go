package canonjson_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	cases := []struct {
		name string
		in   string
		kind canonjson.Kind
		path string
	}{
		{"object", `{"a":1,"b":[true,false,null,"x"]}`, 0, ""},
		{"whitespace", " \t\n{ \"a\" : 1 }\r\n", 0, ""},
		{"nested ok", strings.Repeat("[", 64) + strings.Repeat("]", 64), 0, ""},
		{"duplicate", `{"id":"a","id":"b"}`, canonjson.KindDuplicateKey, ""},
		{"duplicate escaped", `{"a":1,"\u0061":2}`, canonjson.KindDuplicateKey, ""},
		{"duplicate deep", `{"payload":{"x":[{"k":1,"k":2}]}}`, canonjson.KindDuplicateKey, "payload.x[0]"},
		{"too deep", deep, canonjson.KindTooDeep, ""},
		{"invalid utf8", "{\"a\":\"\xff\"}", canonjson.KindInvalidUTF8, ""},
		{"trailing", `{} {}`, canonjson.KindSyntax, ""},
		{"raw control", "{\"a\":\"\x01\"}", canonjson.KindSyntax, "a"},
		{"bad escape", `{"a":"\x"}`, canonjson.KindSyntax, "a"},
		{"leading zero", `{"a":01}`, canonjson.KindSyntax, ""},
		{"bare dot", `{"a":1.}`, canonjson.KindSyntax, "a"},
		{"empty", ``, canonjson.KindSyntax, ""},
		{"unterminated", `{"a":"b`, canonjson.KindSyntax, "a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := canonjson.Check([]byte(tc.in), 64)
			if tc.kind == 0 {
				require.NoError(t, err)
				require.True(t, json.Valid([]byte(tc.in)), "encoding/json agrees it is valid")
				return
			}
			require.Error(t, err)
			var e *canonjson.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.kind, e.Kind, e.Error())
			if tc.path != "" {
				require.Equal(t, tc.path, e.Path)
			}
		})
	}
}

func TestCanonicalIdentifiesEqualValues(t *testing.T) {
	t.Parallel()
	same := [][]string{
		{`{"b":1,"a":[1,2]}`, `{ "a" : [1, 2], "b" : 1 }`},
		{`{"n":1.50}`, `{"n":15e-1}`, `{"n":1.5E0}`, `{"n":0.15e1}`},
		{`{"n":100}`, `{"n":1e2}`, `{"n":1.00e+2}`},
		{`{"n":0}`, `{"n":-0}`, `{"n":0.000}`, `{"n":0e10}`},
		{`{"s":"é"}`, `{"s":"\u00e9"}`, `{"s":"\u00E9"}`},
		{`{"s":"😀"}`, `{"s":"\ud83d\ude00"}`},
		{`{"s":"a/b"}`, `{"s":"a\/b"}`},
		{`{"s":"\n\t"}`, `{"s":"\u000a\u0009"}`},
	}
	for _, group := range same {
		want, err := canonjson.Canonical([]byte(group[0]))
		require.NoError(t, err)
		for _, other := range group[1:] {
			got, err := canonjson.Canonical([]byte(other))
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), "%s vs %s", group[0], other)
		}
	}
	different := [][2]string{
		{`{"n":1}`, `{"n":"1"}`},
		{`{"n":1}`, `{"n":1.0000000000000001}`},
		{`{"s":"\ud800"}`, `{"s":"\ufffd"}`},
		{`{"a":[1,2]}`, `{"a":[2,1]}`},
		{`{"a":null}`, `{}`},
	}
	for _, d := range different {
		a, err := canonjson.Canonical([]byte(d[0]))
		require.NoError(t, err)
		b, err := canonjson.Canonical([]byte(d[1]))
		require.NoError(t, err)
		require.NotEqual(t, string(a), string(b), "%s vs %s", d[0], d[1])
	}
	got, err := canonjson.Canonical([]byte(`{"z":{"y":2,"x":1},"a":"q\"\\"}`))
	require.NoError(t, err)
	require.Equal(t, `{"a":"q\"\\","z":{"x":1,"y":2}}`, string(got))
}

func TestEscapeRunesKeepsTheValue(t *testing.T) {
	t.Parallel()
	in := []byte("{\"a\":\"x\uFFFEy\uFFFF😀é\",\"b\":[\"\U0010FFFF\"]}")
	out := canonjson.EscapeRunes(in, func(r rune) bool { return !canonjson.SQSSafe(r) })
	require.Equal(t, `{"a":"x\ufffey\uffff\ud83d\ude00é","b":["\udbff\udfff"]}`, string(out))
	a, err := canonjson.Canonical(in)
	require.NoError(t, err)
	b, err := canonjson.Canonical(out)
	require.NoError(t, err)
	require.Equal(t, string(a), string(b))

	plain := []byte(`{"a":"plain é"}`)
	require.Equal(t, &plain[0], &canonjson.EscapeRunes(plain, func(r rune) bool { return !canonjson.SQSSafe(r) })[0], "nothing to escape: no copy")
}

func TestSQSText(t *testing.T) {
	t.Parallel()
	require.Equal(t, "ok é", canonjson.SQSText("ok é"))
	require.Equal(t, "a\uFFFDb\uFFFDc\uFFFD", canonjson.SQSText("a\uFFFEb😀c\x01"))
	require.Equal(t, "x\uFFFD", canonjson.SQSText("x\xff"))
}
