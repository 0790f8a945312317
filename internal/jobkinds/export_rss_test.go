package jobkinds_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/observe/costmodel"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

var exportRSS = flag.Bool("export-rss", false, "measure the peak RSS of a tenant export of 200 events of 1 MiB (docs/jobs.md)")

// exportChildEnv carries the child's instructions: the jobs-worker's
// environment, the emulators' endpoints and the job to run.
const exportChildEnv = "EVP_EXPORT_RSS_CHILD"

type exportChild struct {
	Environment map[string]string `json:"environment"`
	DynamoDB    string            `json:"dynamodb"`
	SQS         string            `json:"sqs"`
	S3          string            `json:"s3"`
	JobID       string            `json:"jobId"`
}

// TestExportPeakRSS measures what a tenant export costs in memory: 200
// events with a payload of about 1 MiB each (half of them all `<`, which
// json.Marshal's HTML escaping grew sixfold; half random base64, which
// gzip cannot shrink) exported by the jobs-worker's own wiring in a
// process of its own, whose peak resident set (VmHWM, what Lambda reports
// as Max Memory Used) must stay under the function's deployed memory
// (costmodel.MemoryMB, which a CDK test keeps equal to the CDK app's).
// Run with -export-rss (make measure-export).
func TestExportPeakRSS(t *testing.T) {
	if os.Getenv(exportChildEnv) != "" {
		runExportChild(t)
		return
	}
	if !*exportRSS {
		t.Skip("a measurement: run with -export-rss")
	}
	settings := map[string]string{jobsfn.EnvJobsQueueURL: ""}
	b := setup(t, settings)
	const events, size = 200, 1<<20 - 256
	for i := range events {
		var body string
		if i%2 == 0 {
			body = strings.Repeat("<", size)
		} else {
			raw := make([]byte, size*3/4)
			_, _ = rand.Read(raw)
			body = base64.StdEncoding.EncodeToString(raw)
		}
		b.publishRaw(t, "acme", fmt.Sprintf("evt_rss_%03d", i), json.RawMessage(`{"b":"`+body+`"}`))
	}
	j, _, err := b.engine.Start(context.Background(), jobs.StartParams{Kind: jobkinds.KindExport, TenantID: "acme"})
	require.NoError(t, err)

	childEnv := wiretest.Environment(b.env, settings)
	childEnv[wire.EnvIngestFunction] = ingestfn.Name
	spec, err := json.Marshal(exportChild{
		Environment: childEnv, DynamoDB: b.env.Emulators.DynamoDBEndpoint,
		SQS: b.env.Emulators.SQSEndpoint, S3: b.env.Emulators.S3Endpoint, JobID: j.ID,
	})
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestExportPeakRSS$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), exportChildEnv+"="+string(spec))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	require.NoError(t, cmd.Run(), out.String())
	took := time.Since(start)
	var peak, base int
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "export-rss: "); ok {
			_, err := fmt.Sscanf(v, "base=%dkB peak=%dkB", &base, &peak)
			require.NoError(t, err, v)
		}
	}
	require.Positive(t, peak, out.String())
	got, err := b.engine.Get(context.Background(), j.ID)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCompleted, got.Status, got.Error)
	res := decode[jobkinds.ExportResult](t, got.Result)
	require.Equal(t, events, res.Events)
	limit := costmodel.MemoryMB["jobs-worker"]
	t.Logf("tenant export of %d events of %d bytes: peak RSS %.1f MiB (process before the export %.1f MiB), jobs-worker memory %d MB, %s",
		events, size, float64(peak)/1024, float64(base)/1024, limit, took.Round(time.Second))
	require.Less(t, peak/1024, limit, "the export fits the deployed memory")
}

// runExportChild is the measured process: the jobs-worker's wiring on the
// parent's emulators, sweeping (no queue) until the job is finished.
func runExportChild(t *testing.T) {
	var c exportChild
	require.NoError(t, json.Unmarshal([]byte(os.Getenv(exportChildEnv)), &c))
	base := vmHWM(t)
	cfg, err := jobsworkerfn.Load(envconf.FromMap(c.Environment), topology.Default())
	require.NoError(t, err)
	ac := awslocal.NewConfig()
	cl := jobsworkerfn.Clients{Clients: jobsfn.Clients{
		DynamoDB: awslocal.NewDynamoDBClient(ac, c.DynamoDB), SQS: awslocal.NewSQSClient(ac, c.SQS), S3: awslocal.NewS3Client(ac, c.S3),
	}}
	e, err := jobsworkerfn.New(context.Background(), cfg, cl, wire.Runtime{Log: logging.Discard()})
	require.NoError(t, err)
	for range 20 {
		_, err := e.Sweep(context.Background(), time.Now().Add(5*time.Minute))
		require.NoError(t, err)
		j, err := e.Get(context.Background(), c.JobID)
		require.NoError(t, err)
		if j.Status.Terminal() {
			break
		}
	}
	fmt.Printf("export-rss: base=%dkB peak=%dkB\n", base, vmHWM(t))
}

// vmHWM is the process's peak resident set in kB.
func vmHWM(t *testing.T) int {
	raw, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
