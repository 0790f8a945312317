// Command import-trigger consumes the imports queue, where the platform
// bucket sends its S3 event notifications for imports/: each file created
// under imports/<tenant>/ starts a file-import job (docs/jobs.md), once per
// uploaded version however often S3 repeats the notification.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/importtriggerfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
)

func main() {
	b := wire.NewBoot(importtriggerfn.Name)
	cfg, err := importtriggerfn.Load(b.Env)
	b.Check("invalid config", err)
	h, err := importtriggerfn.New(cfg, jobsfn.NewClients(b.AWSConfig()), b.Runtime())
	b.Check("build", err)
	lambda.Start(h.HandleSQS)
}
