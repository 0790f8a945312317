package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Writing a job kind: a name and a Handler that runs one bounded step at a
// time. A step reads the job's args and the checkpoint the last committed
// step left, does its work, and says what comes next: Continue (commit
// this checkpoint, run the next step), Done (finish with a result),
// Snooze, or an error (jobs.Fail for what no retry can fix; anything else
// is retried with backoff). A crash between steps resumes from the last
// checkpoint. The shipped kinds live in internal/jobkinds, one file each,
// registered in kinds.go. Here the engine runs on the local emulators
// without a queue, so its sweep runs the steps.
func ExampleKind() {
	ctx := context.Background()
	emu, err := awslocal.Start(ctx, awslocal.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer emu.Close()
	cl := emu.Clients()
	res, err := awslocal.Provision(ctx, cl, awslocal.NewPrefix(), topology.Default())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = awslocal.Teardown(ctx, cl, res) }()

	// word-count counts the words of its args' lines, one line a step.
	wordCount := jobs.Kind{Name: "word-count", Handler: jobs.HandlerFunc(func(ctx context.Context, s jobs.Step) (jobs.Outcome, error) {
		var args struct {
			Lines []string `json:"lines"`
		}
		if err := s.Args(&args); err != nil || len(args.Lines) == 0 {
			return jobs.Outcome{}, jobs.Fail("bad_args", fmt.Errorf("want {\"lines\":[…]}: %v", err))
		}
		var done struct{ Line, Words int }
		if err := s.Resume(&done); err != nil {
			return jobs.Outcome{}, err
		}
		done.Words += len(strings.Fields(args.Lines[done.Line]))
		done.Line++
		if done.Line == len(args.Lines) {
			return jobs.Done(map[string]int{"words": done.Words}), nil
		}
		return jobs.Continue(done), nil
	})}

	engine, err := jobs.New(jobs.Config{Bucket: res.Bucket}, jobs.Deps{
		Store:     &dynamo.Jobs{Client: cl.DynamoDB, Table: res.JobsTable},
		Blobs:     &s3blob.S3{Client: cl.S3},
		Incidents: &dynamo.Incidents{Client: cl.DynamoDB, Table: res.IncidentsTable},
		Kinds:     []jobs.Kind{wordCount},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	start := jobs.StartParams{Kind: "word-count", TenantID: "acme", IdempotencyKey: "wc-1",
		Args: json.RawMessage(`{"lines":["the quick brown fox","jumps over","the lazy dog"]}`)}
	job, created, err := engine.Start(ctx, start)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Status, created)

	if _, err := engine.Sweep(ctx, time.Now().Add(time.Minute)); err != nil {
		fmt.Println(err)
		return
	}
	job, _ = engine.Get(ctx, job.ID)
	fmt.Println(job.Status, job.Steps, string(job.Result))

	// Starting it again with the same key returns the same job.
	again, created, _ := engine.Start(ctx, start)
	fmt.Println(again.ID == job.ID, created)
	// Output:
	// queued true
	// completed 3 {"words":9}
	// true false
}
