package envelope_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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
