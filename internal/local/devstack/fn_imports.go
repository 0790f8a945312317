package devstack

import (
	"context"
	"fmt"

	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/wire/importtriggerfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
)

func init() { register("imports", importFunctions) }

// FunctionImportTrigger turns the bucket's S3 event notifications for
// imports/ into file-import jobs.
const FunctionImportTrigger = importtriggerfn.Name

// importFunctions runs import-trigger on the imports queue, where the
// local S3 sends its notifications (awslocal.Provision configures the
// bucket as the CDK app does): a file put under imports/<tenant>/ starts
// its import.
func importFunctions(_ context.Context, s *Stack) ([]Function, error) {
	cfg, err := importtriggerfn.Load(s.env(s.JobsResources()))
	if err != nil {
		return nil, fmt.Errorf("import-trigger config: %w", err)
	}
	c := s.Clients
	h, err := importtriggerfn.New(cfg, jobsfn.Clients{DynamoDB: c.DynamoDB, SQS: c.SQS, S3: c.S3}, s.runtime(FunctionImportTrigger))
	if err != nil {
		return nil, err
	}
	q := s.Resources.ImportsQueue
	return []Function{{
		Name: FunctionImportTrigger, Handler: h.HandleSQS, Timeout: importtriggerfn.Timeout,
		Triggers: []lambdalocal.Trigger{lambdalocal.QueueSource{QueueURL: q.URL, QueueARN: q.ARN, BatchSize: importtriggerfn.BatchSize, MaxConcurrency: 2}},
	}}, nil
}
