package trace_test

import (
	"context"
	"net"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/observe/trace"
)

// BenchmarkSDKCall is one DynamoDB call against the emulator with tracing
// off (the local default: no middleware at all) and on (a subsegment per
// call, and the message's segment sent to a daemon at the end): the
// overhead X-Ray instrumentation adds to every AWS call.
func BenchmarkSDKCall(b *testing.B) {
	emu := awslocaltest.Shared(b)
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, _, err := conn.ReadFromUDP(buf); err != nil {
				return
			}
		}
	}()
	defer func() { _ = trace.Configure(trace.Options{}) }()
	for _, on := range []bool{false, true} {
		name := "off"
		addr := ""
		if on {
			name, addr = "on", conn.LocalAddr().String()
		}
		b.Run(name, func(b *testing.B) {
			if err := trace.Configure(trace.Options{DaemonAddr: addr, SampleAll: true}); err != nil {
				b.Fatal(err)
			}
			cfg := emu.Config()
			trace.Instrument(&cfg)
			ddb := awslocal.NewDynamoDBClient(cfg, emu.DynamoDBEndpoint)
			b.ReportAllocs()
			for b.Loop() {
				ctx, end := trace.Continue(context.Background(), "bench", "")
				_, err := ddb.ListTables(ctx, &dynamodb.ListTablesInput{Limit: new(int32(1))})
				end(err)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
