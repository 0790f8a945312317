// Package importtriggerfn wires import-trigger: the imports queue's
// consumer, which turns the platform bucket's S3 event notifications for
// imports/<tenant>/… into file-import jobs. It only starts jobs (the
// jobs table and queue); jobs-worker runs their steps.
package importtriggerfn

import (
	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
)

// Name is the function's name.
const Name = "import-trigger"

// Timeout bounds one batch (a Start per notification).
const Timeout = jobkinds.ImportTriggerTimeout

// BatchSize is the event source's batch.
const BatchSize = 10

// Config is the engine's part (jobs table and queue, the bucket).
type Config struct{ jobsfn.Config }

// Load reads the config.
func Load(r *envconf.Reader) (Config, error) {
	c := Config{jobsfn.Load(r)}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// New builds the handler: an engine over the kinds' descriptions (their
// argument checks); the import's steps run in jobs-worker.
func New(c Config, cl jobsfn.Clients, rt wire.Runtime) (*jobkinds.ImportTrigger, error) {
	rt = rt.WithDefaults()
	e, err := jobsfn.New(c.Config, cl, rt, jobkinds.Kinds())
	if err != nil {
		return nil, err
	}
	return &jobkinds.ImportTrigger{Jobs: e, Bucket: c.Engine.Bucket, Log: rt.Log}, nil
}
