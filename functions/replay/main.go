// Command replay is the replay engine and operator API: the Step Functions
// replay state machine calls its select / replay-one / summarize actions,
// and the evp CLI and admin tooling invoke it for list, get, triage, ignore,
// event views and direct replays (docs/operations.md).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

func main() {
	b := wire.NewBoot("replay")
	top := topology.Default()
	cfg, err := wire.LoadReplayConfig(envconf.New(), top)
	b.Check("invalid config", err)
	svc := wire.NewReplay(cfg, top, b.Clients(), b.Log)
	lambda.Start(svc.Handle)
}
