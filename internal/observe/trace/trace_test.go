package trace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/observe/trace"
)

// daemon is a fake X-Ray daemon: the UDP socket segments are sent to.
type daemon struct {
	conn *net.UDPConn
	seen map[string]bool
}

func newDaemon(t *testing.T) *daemon {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	// Room for a burst (a split segment is hundreds of packets at once).
	require.NoError(t, conn.SetReadBuffer(8<<20))
	return &daemon{conn: conn, seen: map[string]bool{}}
}

// segment is the part of an X-Ray segment document the tests read.
type segment struct {
	Name        string         `json:"name"`
	ID          string         `json:"id"`
	TraceID     string         `json:"trace_id"`
	ParentID    string         `json:"parent_id"`
	Fault       bool           `json:"fault"`
	Error       bool           `json:"error"`
	Type        string         `json:"type"`
	StartTime   float64        `json:"start_time"`
	EndTime     float64        `json:"end_time"`
	Annotations map[string]any `json:"annotations"`
	AWS         map[string]any `json:"aws"`
	Namespace   string         `json:"namespace"`
	Subsegments []segment      `json:"subsegments"`
	HTTP        map[string]any `json:"http"`
	Cause       map[string]any `json:"cause"`
	Metadata    map[string]any `json:"metadata"`
}

// next reads the next segment document and requires it to be name's. A
// document already seen is skipped: the SDK may emit a segment twice when
// closing it races its context's cancellation (X-Ray dedupes by id).
func (d *daemon) next(t *testing.T, name string) segment {
	t.Helper()
	buf := make([]byte, 64<<10)
	require.NoError(t, d.conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	for {
		n, _, err := d.conn.ReadFromUDP(buf)
		require.NoError(t, err, "no segment %q reached the daemon", name)
		_, doc, ok := bytes.Cut(buf[:n], []byte("\n"))
		require.True(t, ok, "header line then the document: %q", buf[:n])
		var s segment
		require.NoError(t, json.Unmarshal(doc, &s))
		if d.seen[s.ID] {
			continue
		}
		d.seen[s.ID] = true
		require.Equal(t, name, s.Name)
		return s
	}
}

// The SDK's configuration is process-global, so the disabled and enabled
// behaviours are checked in order in one test.
func TestTracing(t *testing.T) {
	ctx := context.Background()
	emu := awslocaltest.Shared(t)

	t.Run("disabled is a no-op", func(t *testing.T) {
		require.NoError(t, trace.Configure(trace.Options{}))
		require.False(t, trace.Enabled())
		cfg := emu.Config()
		before := len(cfg.APIOptions)
		trace.Instrument(&cfg)
		require.Len(t, cfg.APIOptions, before, "no middleware when disabled")
		c, end := trace.Continue(ctx, "consumer", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
		end(nil)
		require.Equal(t, ctx, c)
		require.Empty(t, trace.Header(c))
		//nolint:staticcheck // the Lambda runtime's plain string key
		lambdaCtx := context.WithValue(ctx, "x-amzn-trace-id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
		require.Empty(t, trace.Header(lambdaCtx), "nothing propagates when tracing is off")
	})

	d := newDaemon(t)
	require.NoError(t, trace.Configure(trace.Options{DaemonAddr: d.conn.LocalAddr().String(), SampleAll: true}))
	t.Cleanup(func() { _ = trace.Configure(trace.Options{}) })
	cfg := emu.Config()
	trace.Instrument(&cfg)
	ddb := awslocal.NewDynamoDBClient(cfg, emu.DynamoDBEndpoint)
	q := awslocal.NewSQSClient(cfg, emu.SQSEndpoint)

	t.Run("a message continues the producer's trace with SDK subsegments", func(t *testing.T) {
		const upstream = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
		c, end := trace.Continue(ctx, "consumer-http-billing-events", upstream)
		trace.Annotate(c, "eventId", "evt_1", "tenantId", "acme", "empty", "")
		down := trace.Header(c)
		require.Contains(t, down, "Root=1-5759e988-bd862e3fe1be46a994272793")
		require.Contains(t, down, "Sampled=1")
		require.NotContains(t, down, "Parent=53995c3f42cd8ad8", "downstream's parent is this segment")
		_, err := ddb.ListTables(c, &dynamodb.ListTablesInput{})
		require.NoError(t, err)
		sc, endSub := trace.Subsegment(c, "deliver")
		_, err = q.ListQueues(sc, &sqs.ListQueuesInput{})
		require.NoError(t, err)
		endSub(nil)
		end(nil)

		seg := d.next(t, "consumer-http-billing-events")
		require.Equal(t, "1-5759e988-bd862e3fe1be46a994272793", seg.TraceID)
		require.Equal(t, "53995c3f42cd8ad8", seg.ParentID)
		require.Equal(t, map[string]any{"eventId": "evt_1", "tenantId": "acme"}, seg.Annotations)
		require.Len(t, seg.Subsegments, 2)
		require.Equal(t, "DynamoDB", seg.Subsegments[0].Name)
		require.Equal(t, "aws", seg.Subsegments[0].Namespace)
		require.Equal(t, "ListTables", seg.Subsegments[0].AWS["operation"])
		require.Equal(t, "deliver", seg.Subsegments[1].Name)
		require.Len(t, seg.Subsegments[1].Subsegments, 1)
		require.Equal(t, "SQS", seg.Subsegments[1].Subsegments[0].Name)
		require.Equal(t, "ListQueues", seg.Subsegments[1].Subsegments[0].AWS["operation"])
		require.Equal(t, down, "Root="+seg.TraceID+";Parent="+seg.ID+";Sampled=1")
	})

	t.Run("an error faults the segment", func(t *testing.T) {
		c, end := trace.Continue(ctx, "replay", "")
		_, err := ddb.DescribeTable(c, &dynamodb.DescribeTableInput{TableName: new("no-such-table")})
		require.Error(t, err)
		end(err)
		seg := d.next(t, "replay")
		require.NotEmpty(t, seg.TraceID, "a new trace")
		require.Empty(t, seg.ParentID)
		require.True(t, seg.Fault)
		require.Len(t, seg.Subsegments, 1)
		require.Equal(t, "DescribeTable", seg.Subsegments[0].AWS["operation"])
		require.True(t, seg.Subsegments[0].Error, "a 4xx is the caller's error")
		require.False(t, seg.Subsegments[0].Fault)
		require.GreaterOrEqual(t, seg.EndTime, seg.StartTime)
	})

	t.Run("in Lambda, calls are subsegments of the invocation's segment", func(t *testing.T) {
		const h = "Root=1-5759e988-bd862e3fe1be46a994272795;Parent=53995c3f42cd8ad7;Sampled=1"
		//nolint:staticcheck // the Lambda runtime's plain string key
		lambdaCtx := context.WithValue(ctx, "x-amzn-trace-id", h)
		_, err := ddb.ListTables(lambdaCtx, &dynamodb.ListTablesInput{})
		require.NoError(t, err)
		sub := d.next(t, "DynamoDB")
		require.Equal(t, "subsegment", sub.Type, "an independent subsegment: Lambda records the segment")
		require.Equal(t, "1-5759e988-bd862e3fe1be46a994272795", sub.TraceID)
		require.Equal(t, "53995c3f42cd8ad7", sub.ParentID)
	})

	t.Run("a segment too large for one packet is split", func(t *testing.T) {
		c, end := trace.Continue(ctx, "big", "")
		for i := range 100 {
			sc, endSub := trace.Subsegment(c, fmt.Sprintf("step-%03d", i))
			trace.Annotate(sc, "detail", strings.Repeat("x", 700))
			endSub(nil)
		}
		end(nil)
		seg := d.next(t, "big")
		require.Empty(t, seg.Subsegments)
		for i := range 100 {
			sub := d.next(t, fmt.Sprintf("step-%03d", i))
			require.Equal(t, "subsegment", sub.Type)
			require.Equal(t, seg.ID, sub.ParentID)
			require.Equal(t, seg.TraceID, sub.TraceID)
		}
	})

	t.Run("an unsampled upstream is not recorded", func(t *testing.T) {
		c, end := trace.Continue(ctx, "unsampled", "Root=1-5759e988-bd862e3fe1be46a994272794;Parent=53995c3f42cd8ad9;Sampled=0")
		require.Contains(t, trace.Header(c), "Sampled=0")
		end(nil)
		_, end = trace.Continue(ctx, "sampled-after", "")
		end(nil)
		d.next(t, "sampled-after") // the unsampled one never reached the daemon
	})

	t.Run("the Lambda invocation header is propagated as is", func(t *testing.T) {
		const h = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
		//nolint:staticcheck // the Lambda runtime's plain string key
		lambdaCtx := context.WithValue(ctx, "x-amzn-trace-id", h)
		require.Equal(t, h, trace.Header(lambdaCtx))
		require.Equal(t, "1-5759e988-bd862e3fe1be46a994272793", trace.TraceID(h))
		_, end := trace.Subsegment(ctx, "untraced")
		end(nil) // no segment: nothing to do, no panic
	})
}
