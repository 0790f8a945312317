package stepfnlocal

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExpressions(t *testing.T) {
	t.Parallel()
	input := map[string]any{"a": map[string]any{"b": "x"}, "n": 2.0, "token": "arn:aws:states:eu-west-1:1:execution:m:e", "part": 1.0}
	ctxObj := map[string]any{"Execution": map[string]any{"Id": "exec-1"}}
	for _, tc := range []struct {
		expr string
		want any
		err  string
	}{
		{expr: "$", want: input},
		{expr: "$.a.b", want: "x"},
		{expr: "$$.Execution.Id", want: "exec-1"},
		{expr: "$.missing", err: "States.Runtime"},
		{expr: "$.a.b.c", err: "States.Runtime"},
		{expr: "States.MathAdd($.n, 1)", want: 3.0},
		{expr: "States.MathAdd($.n, -3)", want: -1.0},
		{expr: "States.MathAdd($.a, 1)", err: "States.IntrinsicFailure"},
		{expr: "States.Format('r-{}-{}', $.a.b, $.n)", want: "r-x-2"},
		{expr: "States.Format('it\\'s {}', $.a.b)", want: "it's x"},
		{expr: "States.Format('{} {}', $.a.b)", err: "States.IntrinsicFailure"},
		{expr: "States.Format('{}', $.a)", err: "States.IntrinsicFailure"},
		{expr: "States.Hash('abc', 'SHA-1')", want: "a9993e364706816aba3e25717850c26c9cd0d89d"},
		{expr: "States.Hash('abc', 'CRC32')", err: "States.IntrinsicFailure"},
		{expr: "States.Format('replay-{}-part-{}', States.Hash($.token, 'SHA-1'), States.MathAdd($.part, 1))", want: "replay-6de8fba9c98b1e847e4f0d71789f778f79d950f8-part-2"},
		{expr: "States.JsonToString($.a)", want: `{"b":"x"}`},
		{expr: "States.Nope(1)", err: "States.IntrinsicFailure"},
		{expr: "States.MathAdd($.n, 1", err: "States.Runtime"},
	} {
		got, fail := expr(tc.expr, input, ctxObj)
		if tc.err != "" {
			require.NotNil(t, fail, tc.expr)
			require.Equal(t, tc.err, fail.Error, tc.expr)
			continue
		}
		require.Nil(t, fail, "%s: %+v", tc.expr, fail)
		require.Equal(t, tc.want, got, tc.expr)
	}
}

func TestSplitArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"$.a", []string{"$.a"}},
		{"'a, b', $.c", []string{"'a, b'", "$.c"}},
		{"States.Hash($.t, 'SHA-1'), 2", []string{"States.Hash($.t, 'SHA-1')", "2"}},
		{`'it\'s', 1`, []string{`'it\'s'`, "1"}},
	} {
		got, fail := splitArgs(tc.in)
		require.Nil(t, fail, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	_, fail := splitArgs("'open")
	require.NotNil(t, fail)
}
