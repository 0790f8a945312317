package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	t.Parallel()
	in := `goos: linux
goarch: amd64
pkg: github.com/siteswarm/eventplatform/internal/ingest
cpu: Test CPU
BenchmarkPublish/happy-1-topic-2         	     300	   3500000 ns/op	         3.000 aws-calls/event	         2.90 p50-ms
BenchmarkPublish/duplicate-2             	     300	   2000000 ns/op	         2.000 aws-calls/event
PASS
ok  	github.com/siteswarm/eventplatform/internal/ingest	3.1s
`
	var out bytes.Buffer
	require.NoError(t, run(strings.NewReader(in), &out, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)))
	s := out.String()
	require.Contains(t, s, "## github.com/siteswarm/eventplatform/internal/ingest")
	require.Contains(t, s, "| benchmark | runs | ns/op | aws-calls/event | p50-ms |")
	require.Contains(t, s, "| Publish/happy-1-topic | 300 | 3500000 | 3.000 | 2.90 |")
	require.Contains(t, s, "| Publish/duplicate | 300 | 2000000 | 2.000 |  |")
	require.Contains(t, s, "Test CPU")
}
