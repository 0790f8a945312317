// Command replay is the replay engine and operator API: the Step Functions
// replay state machine calls its select / replay-one / summarize actions,
// and the evp CLI and admin tooling invoke it for list, get, triage, ignore,
// event views and direct replays (docs/operations.md).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/replayfn"
)

func main() {
	b := wire.NewBoot(replayfn.Name)
	cfg, err := replayfn.Load(b.Env, topology.Default())
	b.Check("invalid config", err)
	f, err := replayfn.New(cfg, replayfn.NewClients(b.AWSConfig()), b.Runtime())
	b.Check("build", err)
	lambda.Start(f.Handle)
}
