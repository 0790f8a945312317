// Command replay is the replay engine and operator API: the Step Functions
// replay state machine calls its select / replay-one / summarize actions,
// and the evp CLI and admin tooling invoke it for list, get, triage, ignore,
// event views and direct replays (docs/operations.md).
package main

import (
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/replayfn"
)

func main() { wire.Main(replayfn.Function) }
