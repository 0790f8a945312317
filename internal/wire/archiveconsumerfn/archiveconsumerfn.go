// Package archiveconsumerfn wires consumer-archive: the consume runtime
// around the NDJSON topic archive in S3.
package archiveconsumerfn

import (
	"context"

	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/handlers/topicarchive"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
)

// Name is the function's role name (each topic's function is named by
// consumerfn.FunctionName).
const Name = "consumer-archive"

// EnvPrefix is the key prefix of archive objects (default
// topicarchive.DefaultPrefix); the bucket is ARCHIVE_BUCKET.
const EnvPrefix = "ARCHIVE_PREFIX"

// Config is consumer-archive's configuration.
type Config struct {
	consumerfn.Config
	Bucket string
	Prefix string
}

// Load reads the config from the environment and validates it.
func Load(r *envconf.Reader, top topology.Topology) (Config, error) {
	c := Config{
		Config: consumerfn.Load(r, top, topology.ConsumerArchive),
		Bucket: wire.Required(r, wire.EnvBucket, ""),
		Prefix: r.String(EnvPrefix, topicarchive.DefaultPrefix),
	}
	if err := topicarchive.CheckPrefix(c.Prefix); err != nil {
		r.Fail(fmt.Errorf("%s: %w", EnvPrefix, err))
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, wire.FromVars(c.Consume.Validate(), consumerfn.EnvBackoffBase, consumerfn.EnvBackoffCap, consumerfn.EnvConcurrency)
}

// Clients are the AWS services consumer-archive calls (consumerfn's).
type Clients = consumerfn.Clients

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients { return consumerfn.NewClients(cfg) }

// New builds the consumer-archive handler.
func New(c Config, cl Clients, rt wire.Runtime) (*consume.Consumer, error) {
	return consumerfn.New(c.Config, cl, rt, nil, &topicarchive.Archiver{Store: &s3blob.S3{Client: cl.S3}, Bucket: c.Bucket, Prefix: c.Prefix})
}

// Kind is consumer-archive as the CDK app, the local stack and the link
// test see it (consumerfn.Kind): it writes under archive/<topic>/ in the
// platform bucket.
var Kind = consumerfn.Kind{
	Kind:  topology.ConsumerArchive,
	Role:  Name,
	Batch: true,
	Objects: &consumerfn.Objects{
		EnvBucket: wire.EnvBucket, EnvRoot: EnvPrefix, Root: topicarchive.DefaultPrefix,
		Actions: []string{"s3:PutObject"},
	},
	Load: func(r *envconf.Reader, top topology.Topology) error { _, err := Load(r, top); return err },
	Local: func(_ context.Context, r *envconf.Reader, top topology.Topology, cl consumerfn.Clients, rt wire.Runtime) (*consume.Consumer, error) {
		cfg, err := Load(r, top)
		if err != nil {
			return nil, err
		}
		return New(cfg, cl, rt)
	},
}
