package jobkinds_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
)

// publishRaw ingests an internal event of tenant with the given payload.
func (b *bundle) publishRaw(t testing.TB, tenant, id string, payload json.RawMessage) {
	t.Helper()
	ev := envelope.Event{SchemaVersion: envelope.SchemaVersion, ID: id, TenantID: tenant, Type: "inquiry.created", Source: "storefront",
		Timestamp: time.Now().UTC(), Payload: payload}
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false) // the producer sends < as <
	require.NoError(t, enc.Encode(ev))
	res, err := b.ingest.Publish(context.Background(), raw.Bytes())
	require.NoError(t, err)
	require.Contains(t, []envelope.Status{envelope.StatusEnqueued, envelope.StatusAccepted}, res.Status, res)
}

// An export flushes a part once it holds partBytes of NDJSON, however many
// records the page has, and copies payloads as they were sent: no HTML
// escaping (json.Marshal wrote each < as \u003c, six bytes for one, so a
// page of 1 MiB payloads of < held 6 MiB each in memory) (issue 21 #7).
func TestExportFlushesPartsByBytesAndKeepsPayloadsAsSent(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	const size = 40 << 10
	payload := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"n":%d,"html":"%s","amp":"a&b>c"}`, i, strings.Repeat("<", size)))
	}
	for i := range 10 {
		b.publishRaw(t, "acme", fmt.Sprintf("evt_big_%d", i), payload(i))
	}
	partBytes := 64 << 10 // 64 KiB: two 40 KiB events overflow it
	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindExport, TenantID: "acme",
		Args: json.RawMessage(fmt.Sprintf(`{"pageSize":1000,"partBytes":%d}`, partBytes))})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	require.Equal(t, 2, j.Steps, "one step of events (a page of 1000), one of incidents and the manifest")
	res := decode[jobkinds.ExportResult](t, j.Result)
	require.Equal(t, 10, res.Events)
	raw, err := b.blobs.Get(ctx, b.env.Resources.Bucket, res.ManifestKey)
	require.NoError(t, err)
	m := decode[jobkinds.ExportManifest](t, raw)
	require.Len(t, m.Parts, 5, "10 events of 40 KiB in parts of 64 KiB: two each")
	seen := 0
	for _, p := range m.Parts {
		require.Equal(t, "events", p.Records)
		obj, err := b.blobs.Get(ctx, b.env.Resources.Bucket, p.Key)
		require.NoError(t, err)
		zr, err := gzip.NewReader(bytes.NewReader(obj))
		require.NoError(t, err)
		plain, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.Less(t, len(plain), partBytes+size+1024, "a part ends with the record that filled it")
		require.NotContains(t, string(plain), `\u003c`, "no HTML escaping")
		require.NotContains(t, string(plain), `\u0026`)
		for _, l := range strings.Split(strings.TrimSpace(string(plain)), "\n") {
			var ev envelope.Event
			require.NoError(t, json.Unmarshal([]byte(l), &ev))
			require.Contains(t, string(ev.Payload), strings.Repeat("<", size), "the payload as sent")
			require.Contains(t, string(ev.Payload), `"a&b>c"`)
			seen++
		}
	}
	require.Equal(t, 10, seen)
}
