package envelope_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

const eventsDir = "../../events"

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join(eventsDir, "schema", "platform-event.schema.json"))
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	require.NoError(t, c.AddResource("platform-event.schema.json", doc))
	s, err := c.Compile("platform-event.schema.json")
	require.NoError(t, err)
	return s
}

func schemaAccepts(t *testing.T, s *jsonschema.Schema, raw []byte) bool {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return false
	}
	return s.Validate(doc) == nil
}

// TestSchemaAgreesWithValidator walks every sample envelope: valid ones must
// pass both the JSON Schema and the Go validator; invalid ones (named
// <code>.<case>.json) must fail both, the Go validator with that code.
func TestSchemaAgreesWithValidator(t *testing.T) {
	t.Parallel()
	s := compileSchema(t)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

	valid, err := filepath.Glob(filepath.Join(eventsDir, "ingest", "valid", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, valid)
	for _, path := range valid {
		t.Run("valid/"+filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, schemaAccepts(t, s, raw), "schema rejects a valid sample")
			_, rerr := envelope.Parse(raw, now, envelope.DefaultLimits())
			require.Nil(t, rerr, "validator rejects a valid sample")
		})
	}

	invalid, err := filepath.Glob(filepath.Join(eventsDir, "ingest", "invalid", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, invalid)
	for _, path := range invalid {
		name := filepath.Base(path)
		want := envelope.Code(strings.SplitN(name, ".", 2)[0])
		t.Run("invalid/"+name, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			require.False(t, schemaAccepts(t, s, raw), "schema accepts an invalid sample")
			_, rerr := envelope.Parse(raw, now, envelope.DefaultLimits())
			require.NotNil(t, rerr, "validator accepts an invalid sample")
			require.Equal(t, want, rerr.Code, rerr.Message)
			require.NotEmpty(t, rerr.Message)
		})
	}
}

// The Stripe adapter's canonical envelopes must satisfy the schema too; the
// samples under events/stripe are raw Stripe events, not envelopes, so they
// are checked by the adapter's own tests. Here: every sample is valid JSON.
func TestSamplesAreJSON(t *testing.T) {
	t.Parallel()
	err := filepath.WalkDir(eventsDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".json" {
			return err
		}
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		require.True(t, json.Valid(raw), path)
		return nil
	})
	require.NoError(t, err)
}

// craft is a valid envelope with members replaced (raw JSON values),
// added, or removed (""), in a fixed order.
func craft(over map[string]string) []byte {
	names := []string{"schemaVersion", "id", "tenantId", "type", "source", "timestamp", "payload"}
	vals := map[string]string{"schemaVersion": `1`, "id": `"inq_01"`, "tenantId": `"acme"`, "type": `"inquiry.created"`,
		"source": `"storefront"`, "timestamp": `"2026-11-29T18:42:10Z"`, "payload": `{"name":"Ada"}`}
	var extra []string
	for k, v := range over {
		if _, ok := vals[k]; !ok {
			extra = append(extra, k)
		}
		vals[k] = v
	}
	slices.Sort(extra)
	var b strings.Builder
	b.WriteByte('{')
	for _, k := range append(names, extra...) {
		if vals[k] == "" {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		name := strconv.Quote(k)
		if strings.Contains(k, `\`) { // spelled with a JSON escape: as is
			name = `"` + k + `"`
		}
		b.WriteString(name + ":" + vals[k])
	}
	b.WriteByte('}')
	return []byte(b.String())
}

func q(s string) string { return strconv.Quote(s) }

// The published schema and ingest's parser are one another's mirror: an
// independent validator (santhosh-tekuri/jsonschema, format assertions
// on) and envelope.Parse give the same verdict on every crafted envelope,
// and the verdict is the one decided for it (RFC 3339 for timestamps, null
// as absent for optional members, numbers by value, exact member names).
// Before, ingest accepted null members, payloadRef null, a comma before
// the fraction and offsets like +24:00 and "ID" for "id", and refused
// schemaVersion 1.0 and lowercase t/z, where the schema said the opposite.
func TestSchemaAndIngestAgreeOnCraftedEnvelopes(t *testing.T) {
	t.Parallel()
	s := compileSchema(t)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ts := func(v string) map[string]string { return map[string]string{"timestamp": q(v)} }
	cases := []struct {
		name string
		over map[string]string
		want bool
	}{
		{"valid", nil, true},
		{"schemaVersion omitted", map[string]string{"schemaVersion": ""}, true},
		{"schemaVersion null", map[string]string{"schemaVersion": `null`}, true},
		{"schemaVersion 1.0", map[string]string{"schemaVersion": `1.0`}, true},
		{"schemaVersion 1e0", map[string]string{"schemaVersion": `1e0`}, true},
		{"schemaVersion 10e-1", map[string]string{"schemaVersion": `10e-1`}, true},
		{"schemaVersion 2", map[string]string{"schemaVersion": `2`}, false},
		{"schemaVersion 1.5", map[string]string{"schemaVersion": `1.5`}, false},
		{"schemaVersion a string", map[string]string{"schemaVersion": `"1"`}, false},
		{"schemaVersion true", map[string]string{"schemaVersion": `true`}, false},
		{"subject null", map[string]string{"subject": `null`}, true},
		{"subject empty", map[string]string{"subject": `""`}, false},
		{"subject 255 characters", map[string]string{"subject": q(strings.Repeat("é", 255))}, true},
		{"subject 256 characters", map[string]string{"subject": q(strings.Repeat("é", 256))}, false},
		{"subject with a tab", map[string]string{"subject": `"a\tb"`}, false},
		{"subject with DEL", map[string]string{"subject": `"a\u007fb"`}, false},
		{"subject with a C1 control", map[string]string{"subject": `"a\u0085b"`}, false},
		{"subject with a line separator", map[string]string{"subject": `"a\u2028b"`}, true},
		{"subject with an emoji", map[string]string{"subject": `"cus_😀"`}, true},
		{"subject with a lone surrogate escape", map[string]string{"subject": `"a\ud800b"`}, true}, // both read U+FFFD
		{"subject a number", map[string]string{"subject": `7`}, false},
		{"traceparent null", map[string]string{"traceparent": `null`}, true},
		{"traceparent", map[string]string{"traceparent": `"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`}, true},
		{"traceparent version ff", map[string]string{"traceparent": `"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`}, false},
		{"traceparent zero trace id", map[string]string{"traceparent": `"00-00000000000000000000000000000000-00f067aa0ba902b7-01"`}, false},
		{"traceparent zero parent id", map[string]string{"traceparent": `"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"`}, false},
		{"traceparent uppercase", map[string]string{"traceparent": `"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"`}, false},
		{"payloadRef null", map[string]string{"payloadRef": `null`}, false},
		{"payloadRef", map[string]string{"payloadRef": `{"bucket":"b","key":"k","size":1,"sha256":"` + strings.Repeat("0", 64) + `"}`}, false},
		{"payload null", map[string]string{"payload": `null`}, false},
		{"payload missing", map[string]string{"payload": ""}, false},
		{"payload empty object", map[string]string{"payload": `{}`}, true},
		{"payload an array", map[string]string{"payload": `[]`}, false},
		{"payload a string", map[string]string{"payload": `"x"`}, false},
		{"id null", map[string]string{"id": `null`}, false},
		{"id empty", map[string]string{"id": `""`}, false},
		{"id 255 characters", map[string]string{"id": q(strings.Repeat("a", 255))}, true},
		{"id 256 characters", map[string]string{"id": q(strings.Repeat("a", 256))}, false},
		{"id with a slash", map[string]string{"id": `"a/b"`}, false},
		{"id starting with a dash", map[string]string{"id": `"-a"`}, false},
		{"id with a trailing newline", map[string]string{"id": `"a\n"`}, false},
		{"tenantId uppercase", map[string]string{"tenantId": `"Acme"`}, false},
		{"tenantId 64 characters", map[string]string{"tenantId": q(strings.Repeat("a", 64))}, true},
		{"tenantId 65 characters", map[string]string{"tenantId": q(strings.Repeat("a", 65))}, false},
		{"tenantId missing", map[string]string{"tenantId": ""}, false},
		{"type one word", map[string]string{"type": `"inquiry"`}, false},
		{"type uppercase", map[string]string{"type": `"Inquiry.created"`}, false},
		{"type 128 characters", map[string]string{"type": q("a." + strings.Repeat("b", 126))}, true},
		{"type 129 characters", map[string]string{"type": q("a." + strings.Repeat("b", 127))}, false},
		{"source uppercase", map[string]string{"source": `"Storefront"`}, false},
		{"source 65 characters", map[string]string{"source": q(strings.Repeat("s", 65))}, false},
		{"timestamp lowercase t and z", ts("2026-11-29t18:42:10z"), true},
		{"timestamp with an offset", ts("2026-11-29T19:42:10.5+01:00"), true},
		{"timestamp offset -00:00", ts("2026-11-29T18:42:10-00:00"), true},
		{"timestamp offset +23:59", ts("2026-11-29T18:42:10+23:59"), true},
		{"timestamp twelve fraction digits", ts("2026-11-29T18:42:10.123456789012Z"), true},
		{"timestamp a leap day", ts("2024-02-29T10:00:00Z"), true},
		{"timestamp year 0000", ts("0000-01-01T00:00:00Z"), true},
		{"timestamp comma before the fraction", ts("2026-11-29T18:42:10,5Z"), false},
		{"timestamp offset +24:00", ts("2026-11-29T18:42:10+24:00"), false},
		{"timestamp offset +23:60", ts("2026-11-29T18:42:10+23:60"), false},
		{"timestamp offset without colon", ts("2026-11-29T18:42:10+0100"), false},
		{"timestamp hour 24", ts("2026-11-29T24:00:00Z"), false},
		{"timestamp 29 February 2026", ts("2026-02-29T10:00:00Z"), false},
		{"timestamp leap second", ts("2016-12-31T23:59:60Z"), false},
		{"timestamp a space for T", ts("2026-11-29 18:42:10Z"), false},
		{"timestamp without seconds", ts("2026-11-29T18:42Z"), false},
		{"timestamp without offset", ts("2026-11-29T18:42:10"), false},
		{"timestamp empty fraction", ts("2026-11-29T18:42:10.Z"), false},
		{"timestamp a date", ts("2026-11-29"), false},
		{"timestamp fullwidth digits", ts("２026-11-29T18:42:10Z"), false},
		{"timestamp a number", map[string]string{"timestamp": `1796212800`}, false},
		{"a name in other case (ID)", map[string]string{"id": "", "ID": `"inq_01"`}, false},
		{"a name in other case (Payload)", map[string]string{"payload": "", "Payload": `{}`}, false},
		{"a name spelled with an escape", map[string]string{"id": "", `\u0069d`: `"inq_01"`}, true},
		{"an unknown member", map[string]string{"extra": `1`}, false},
		{"an unknown member, null", map[string]string{"extra": `null`}, false},
	}
	for _, c := range cases {
		raw := craft(c.over)
		schema := schemaAccepts(t, s, raw)
		_, rerr := envelope.Parse(raw, now, envelope.DefaultLimits())
		require.Equal(t, c.want, schema, "%s: the schema's verdict on %s", c.name, raw)
		require.Equal(t, c.want, rerr == nil, "%s: ingest's verdict on %s: %v", c.name, raw, rerr)
	}

	// What a schema cannot say, ingest alone refuses (the schema's
	// description names each).
	deep := `{"a":` + strings.Repeat(`[`, envelope.MaxPayloadDepth) + strings.Repeat(`]`, envelope.MaxPayloadDepth) + `}`
	for name, over := range map[string]map[string]string{
		"a timestamp 2 h in the future": ts("2026-12-01T02:00:00Z"),
		"a duplicate member name":       {"extra": ""},
		"a payload nested too deep":     {"payload": deep},
	} {
		raw := craft(over)
		if name == "a duplicate member name" {
			raw = []byte(strings.Replace(string(raw), `"id":"inq_01"`, `"id":"inq_01","id":"inq_02"`, 1))
		}
		require.True(t, schemaAccepts(t, s, raw), "%s: the schema cannot refuse %s", name, raw)
		_, rerr := envelope.Parse(raw, now, envelope.DefaultLimits())
		require.NotNil(t, rerr, "%s: ingest refuses %s", name, raw)
	}
}
