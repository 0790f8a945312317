// Package purgeapifn wires the purge-api function (private, invoked by ARN
// like ingest): environment → Config, the DynamoDB client (the purge
// table) and the Lambda client (requests are published through ingest),
// the purge ingress behind the function's ops.
package purgeapifn

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/lambdainvoke"
	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/wire"
)

// Name is the function's name.
const Name = "purge-api"

// EnvCoalesceWindow is tier 1's coalescing window, e.g. "5s". The function
// also reads PURGE_TABLE, INGEST_FUNCTION_ARN and INGEST_TIMEOUT.
const EnvCoalesceWindow = "PURGE_COALESCE_WINDOW"

// FunctionTimeout covers the store's reads and writes and one ingest call.
const FunctionTimeout = 15 * time.Second

// MaxIngestTimeout is the largest accepted INGEST_TIMEOUT.
const MaxIngestTimeout = 10 * time.Second

// Config is the purge-api function's configuration.
type Config struct {
	Ingress        cachepurge.IngressConfig
	PurgeTable     string
	IngestFunction string
	IngestTimeout  time.Duration
}

// Load reads the config from the environment and validates it.
func Load(r *envconf.Reader) (Config, error) {
	c := Config{
		Ingress:        cachepurge.IngressConfig{Window: r.Duration(EnvCoalesceWindow, 0)}.WithDefaults(),
		PurgeTable:     wire.Required(r, wire.EnvPurgeTable, ""),
		IngestFunction: wire.Required(r, wire.EnvIngestFunction, "purges are published through ingest"),
		IngestTimeout:  r.Duration(wire.EnvIngestTimeout, 5*time.Second),
	}
	if c.IngestTimeout < time.Second || c.IngestTimeout > MaxIngestTimeout {
		r.Fail(fmt.Errorf("%s must be 1s..%s (inside the function's %s)", wire.EnvIngestTimeout, MaxIngestTimeout, FunctionTimeout))
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, wire.FromVars(c.Ingress.Validate(), EnvCoalesceWindow)
}

// Clients are the AWS services purge-api calls.
type Clients struct {
	DynamoDB *dynamodb.Client
	Lambda   *lambda.Client
}

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients {
	return Clients{DynamoDB: dynamodb.NewFromConfig(cfg), Lambda: lambda.NewFromConfig(cfg)}
}

// New builds the function's handler.
func New(c Config, cl Clients, rt wire.Runtime) (*cachepurge.Function, error) {
	rt = rt.WithDefaults()
	store := &dynamo.Purge{Client: cl.DynamoDB, Table: c.PurgeTable, Now: rt.Now}
	in, err := cachepurge.NewIngress(c.Ingress, cachepurge.IngressDeps{
		Jobs:      store,
		Publisher: &lambdainvoke.Ingest{Client: cl.Lambda, Function: c.IngestFunction, Timeout: c.IngestTimeout},
		Now:       rt.Now,
		Log:       rt.Log,
	})
	if err != nil {
		return nil, err
	}
	return &cachepurge.Function{Ingress: in, Reports: store}, nil
}
