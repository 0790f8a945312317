package jobkinds

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An import file rewritten without a subject: each of its records becomes
// a blank line (line numbers keep their meaning), a Stripe list page keeps
// its other events, a line no import could read goes when it holds the
// subject's id; gzip stays gzip. The places found are what the error
// report is filtered by.
func TestWithoutImportRecords(t *testing.T) {
	t.Parallel()
	env := func(id, subject string) string {
		return `{"schemaVersion":1,"id":"` + id + `","type":"inquiry.created","source":"storefront","subject":"` + subject + `","payload":{"n":1}}`
	}
	evt := func(id, customer string) string {
		return `{"id":"` + id + `","object":"event","type":"invoice.paid","data":{"object":{"id":"in_` + id + `","object":"invoice","customer":"` + customer + `"}}}`
	}
	lines := []string{
		env("a1", "user-42"),
		env("a2", "user-7"),
		"",
		`{"object":"list","data":[` + evt("e1", "cus_A") + `,` + evt("e2", "user-42") + `,` + evt("e3", "cus_B") + `],"has_more":false}`,
		`{"object":"list","data":[` + evt("e4", "user-42") + `]}`,
		`{broken "user-42" ann@x`,
		`{broken "user-7"`,
		evt("e5", "user-42"),
	}
	body := []byte(strings.Join(lines, "\n") + "\n")
	for _, gz := range []bool{false, true} {
		in := body
		if gz {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			_, _ = zw.Write(body)
			require.NoError(t, zw.Close())
			in = z.Bytes()
		}
		found := places{}
		out, removed, kept, err := withoutImportRecords(in, "user-42", found)
		require.NoError(t, err)
		if gz {
			zr, err := gzip.NewReader(bytes.NewReader(out))
			require.NoError(t, err)
			out, err = io.ReadAll(zr)
			require.NoError(t, err)
		}
		got := strings.Split(string(out), "\n")
		require.Len(t, got, len(lines)+1, "every line keeps its number")
		require.Equal(t, "", got[0])
		require.Equal(t, lines[1], got[1])
		require.NotContains(t, got[3], `"e2"`)
		require.Contains(t, got[3], `"e1"`)
		require.Contains(t, got[3], `"e3"`)
		require.Equal(t, "", got[4], "a page left empty is a blank line")
		require.Equal(t, "", got[5])
		require.Equal(t, lines[6], got[6])
		require.Equal(t, "", got[7])
		require.Equal(t, 5, removed, "a1, e2, e4, the broken line, e5")
		require.Equal(t, 4, kept, "a2, e1, e3, the other broken line")
		require.Equal(t, places{1: {-1}, 4: {1}, 5: {0}, 6: {-1}, 8: {-1}}, found)

		report := []byte(`{"line":4,"index":1,"id":"e2","code":"x","message":"m"}
{"line":4,"index":0,"id":"e1","code":"x","message":"m"}
{"line":6,"code":"invalid_record","message":"the line is not a JSON object"}
{"line":7,"code":"invalid_record","message":"the line is not a JSON object"}
{"line":2,"id":"a2","code":"x","message":"quotes \"user-42\""}
{"truncated":true,"reported":5,"unreported":1}
`)
		rout, rremoved, rkept, err := withoutReportLines(report, "user-42", found)
		require.NoError(t, err)
		require.Equal(t, 3, rremoved)
		require.Equal(t, 3, rkept)
		require.Equal(t, `{"line":4,"index":0,"id":"e1","code":"x","message":"m"}
{"line":7,"code":"invalid_record","message":"the line is not a JSON object"}
{"truncated":true,"reported":5,"unreported":1}
`, string(rout))
	}
}

// A version too large to hold is scanned as a stream (gzip inflated), a
// line longer than an import reads judged by its bytes across buffers.
func TestScanNamesStreamsLargeVersions(t *testing.T) {
	t.Parallel()
	long := `{"payload":"` + strings.Repeat("x", MaxImportLineBytes+3<<20) + `","subject":"user-42"}`
	cases := map[string]struct {
		body string
		want bool
	}{
		"a record of the subject": {`{"subject":"user-7"}` + "\n" + `{"subject":"user-42"}` + "\n", true},
		"none":                    {`{"subject":"user-7"}` + "\n" + `{"subject":"user-420"}`, false},
		"a line over the limit":   {`{"subject":"user-7"}` + "\n" + long + "\n", true},
		"a Stripe list page":      {`{"object":"list","data":[{"id":"e","object":"event","data":{"object":{"id":"in_1","customer":"user-42"}}}]}`, true},
	}
	for name, tc := range cases {
		for _, gz := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tc.body)
			if gz {
				var z bytes.Buffer
				zw := gzip.NewWriter(&z)
				_, _ = zw.Write([]byte(tc.body))
				require.NoError(t, zw.Close())
				r = &z
			}
			got, err := scanNames(r, "user-42")
			require.NoError(t, err, name)
			require.Equal(t, tc.want, got, "%s (gzip %v)", name, gz)
		}
	}
}
