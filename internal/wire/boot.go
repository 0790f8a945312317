package wire

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/siteswarm/eventplatform/internal/logging"
	"github.com/siteswarm/eventplatform/internal/trace"
)

// Boot is what every Lambda main does around its own config and
// constructor: a JSON logger named for the function, the default AWS config
// with AWS calls traced as X-Ray subsegments, and a loud exit when anything
// at cold start fails (a function that cannot configure itself must not
// serve).
type Boot struct {
	Ctx  context.Context
	Log  *slog.Logger
	name string
}

// NewBoot starts a cold start for the named function.
func NewBoot(name string) Boot {
	return Boot{Ctx: context.Background(), Log: logging.Lambda(name), name: name}
}

// Check exits the process when err is set.
func (b Boot) Check(what string, err error) {
	if err != nil {
		b.Log.Error(b.name+": cold start failed: "+what, "error", err)
		os.Exit(1)
	}
}

// Clients loads the default AWS config chain and builds the clients.
func (b Boot) Clients() Clients {
	cfg, err := config.LoadDefaultConfig(b.Ctx)
	b.Check("aws config", err)
	trace.Instrument(&cfg)
	return NewClients(cfg)
}
