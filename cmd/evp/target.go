package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/spf13/cobra"

	"github.com/siteswarm/eventplatform/internal/devapi"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/replay"
)

// SSM parameters a deployed stage publishes for the operator CLI
// (docs/operations.md; the CDK app creates them).
const (
	paramReplayFunction     = "/evp/%s/replay-function"
	paramReplayStateMachine = "/evp/%s/replay-state-machine"
	paramHealthFunction     = "/evp/%s/health-function"
)

// target is where the operator commands act: the local `make dev` stack by
// default, or a deployed stage with --stage (and optionally --profile and
// --region).
type target struct {
	url     string
	stage   string
	profile string
	region  string
	// function overrides the replay function's name or ARN.
	function string
}

func (t *target) flags(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&t.url, "url", localStackURL(), "the local stack's URL ($EVP_URL)")
	f.StringVar(&t.stage, "stage", "", "act on a deployed stage (reads /evp/<stage>/… SSM parameters)")
	f.StringVar(&t.profile, "profile", "", "AWS shared-config profile for --stage")
	f.StringVar(&t.region, "region", "", "AWS region for --stage")
	f.StringVar(&t.function, "function", "", "the replay function's name or ARN (default: local \"replay\", or the stage's SSM parameter)")
}

// actions is what the commands need from a target.
type actions interface {
	// call invokes one replay-function action.
	call(ctx context.Context, c operator.Call, out any) error
	// bulk runs a replay request to the end, reporting progress.
	bulk(ctx context.Context, r replay.Request, progress func(done int)) (replay.Summary, error)
	// describe names the target for messages.
	describe() string
	// notifyHealth tells the subscriber-health function a topic changed
	// (an asynchronous invoke), so a pause or resume applies at once.
	notifyHealth(ctx context.Context, topic string) error
}

func (t *target) actions(ctx context.Context) (actions, error) {
	if t.stage == "" {
		if t.profile != "" || t.region != "" {
			return nil, errors.New("--profile and --region need --stage")
		}
		fn := t.function
		if fn == "" {
			fn = "replay"
		}
		// Bulk replays run the local stack's replay state machine (the
		// definition a stage deploys), exactly as on a stage.
		cfg := devapi.Config()
		return &stageOperator{
			invoker: invoker{client: devapi.LambdaClient(cfg, t.url), function: fn, where: t.url},
			sfn:     devapi.SFNClient(cfg, t.url+devapi.StepFunctionsPath),
			machine: func(context.Context) (string, error) { return devapi.ReplayStateMachineARN, nil },
			health:  func(context.Context) (string, error) { return devapi.HealthFunction, nil },
		}, nil
	}
	cfg, err := awsConfig(ctx, t.profile, t.region)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	params := ssm.NewFromConfig(cfg)
	fn := t.function
	if fn == "" {
		if fn, err = parameter(ctx, params, fmt.Sprintf(paramReplayFunction, t.stage)); err != nil {
			return nil, err
		}
	}
	return &stageOperator{
		invoker: invoker{client: lambda.NewFromConfig(cfg), function: fn, where: "stage " + t.stage},
		sfn:     sfn.NewFromConfig(cfg),
		machine: func(ctx context.Context) (string, error) {
			return parameter(ctx, params, fmt.Sprintf(paramReplayStateMachine, t.stage))
		},
		health: func(ctx context.Context) (string, error) {
			return parameter(ctx, params, fmt.Sprintf(paramHealthFunction, t.stage))
		},
	}, nil
}

func parameter(ctx context.Context, c *ssm.Client, name string) (string, error) {
	out, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("read SSM parameter %s (is the stage deployed, and are --profile/--region right?): %w", name, err)
	}
	return aws.ToString(out.Parameter.Value), nil
}

// invoker calls the replay function through the Lambda Invoke API.
type invoker struct {
	client   *lambda.Client
	function string
	where    string
}

func (i invoker) describe() string { return i.where }

// functionError is the replay function's error result (the Lambda
// runtime's errorType / errorMessage).
type functionError struct {
	Type    string `json:"errorType"`
	Message string `json:"errorMessage"`
}

func (e *functionError) Error() string { return e.Message }

func (i invoker) call(ctx context.Context, c operator.Call, out any) error {
	payload, err := json.Marshal(c)
	if err != nil {
		return err
	}
	res, err := i.client.Invoke(ctx, &lambda.InvokeInput{
		FunctionName: aws.String(i.function), Payload: payload, InvocationType: lambdatypes.InvocationTypeRequestResponse,
	})
	if err != nil {
		return fmt.Errorf("invoke %s at %s: %w (is `make dev` running, or is --stage right?)", i.function, i.where, err)
	}
	if res.FunctionError != nil {
		fe := &functionError{}
		if json.Unmarshal(res.Payload, fe) != nil || fe.Message == "" {
			fe.Message = string(res.Payload)
		}
		return fe
	}
	if re := operator.RefusalOf(res.Payload); re != nil {
		return re
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(res.Payload, out); err != nil {
		return fmt.Errorf("decode %s answer: %w", c.Action, err)
	}
	return nil
}

// stageOperator starts the replay state machine for bulk replays: the
// stage's, or the local stack's.
type stageOperator struct {
	invoker
	sfn     *sfn.Client
	machine func(context.Context) (string, error)
	health  func(context.Context) (string, error)
}

func (s *stageOperator) notifyHealth(ctx context.Context, topic string) error {
	fn, err := s.health(ctx)
	if err != nil {
		return err
	}
	payload, err := json.Marshal(map[string]string{"topic": topic})
	if err != nil {
		return err
	}
	_, err = s.client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: payload, InvocationType: lambdatypes.InvocationTypeEvent})
	return err
}

// pollEvery is how often a bulk replay's execution is polled.
var pollEvery = 2 * time.Second

func (s *stageOperator) bulk(ctx context.Context, r replay.Request, progress func(done int)) (replay.Summary, error) {
	arn, err := s.machine(ctx)
	if err != nil {
		return replay.Summary{}, err
	}
	input, err := json.Marshal(r)
	if err != nil {
		return replay.Summary{}, err
	}
	var nonce [3]byte
	_, _ = rand.Read(nonce[:])
	name := fmt.Sprintf("evp-replay-%s-%s-%x", sanitize(r.Actor), time.Now().UTC().Format("20060102T150405"), nonce)
	start, err := s.sfn.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String(name), Input: aws.String(string(input))})
	if err != nil {
		return replay.Summary{}, fmt.Errorf("start the replay state machine: %w", err)
	}
	exec := aws.ToString(start.ExecutionArn)
	// An execution replays a bounded number of pages, then hands the rest
	// to a new execution and ends with its ARN: follow the chain to the
	// last part, whose output is the whole summary.
	before := 0 // iterations finished by earlier parts
	for {
		d, err := s.sfn.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(exec)})
		if err != nil {
			return replay.Summary{}, fmt.Errorf("describe %s: %w", exec, err)
		}
		n, countErr := s.iterations(ctx, exec)
		if progress != nil && countErr == nil {
			progress(before + n)
		}
		switch d.Status {
		case sfntypes.ExecutionStatusRunning, sfntypes.ExecutionStatusPendingRedrive:
		case sfntypes.ExecutionStatusSucceeded:
			var out struct {
				replay.Summary
				ContinuedAs string `json:"continuedAs"`
			}
			if err := json.Unmarshal([]byte(aws.ToString(d.Output)), &out); err != nil {
				return replay.Summary{}, fmt.Errorf("execution %s output: %w", exec, err)
			}
			if out.ContinuedAs == "" {
				return out.Summary, nil
			}
			before += n
			exec = out.ContinuedAs
			continue
		default:
			return replay.Summary{}, fmt.Errorf("execution %s %s: %s %s", exec, d.Status, aws.ToString(d.Error), aws.ToString(d.Cause))
		}
		select {
		case <-ctx.Done():
			return replay.Summary{}, fmt.Errorf("stopped waiting; the execution %s keeps running: %w", exec, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// iterations counts the finished Map iterations of an execution (the
// replay-one calls done so far).
func (s *stageOperator) iterations(ctx context.Context, exec string) (int, error) {
	n := 0
	p := sfn.NewGetExecutionHistoryPaginator(s.sfn, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(exec), MaxResults: 1000})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return n, err
		}
		for _, ev := range page.Events {
			switch ev.Type {
			case sfntypes.HistoryEventTypeMapIterationSucceeded, sfntypes.HistoryEventTypeMapIterationFailed, sfntypes.HistoryEventTypeMapIterationAborted:
				n++
			}
		}
	}
	return n, nil
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	if b.Len() == 0 {
		return "cli"
	}
	return b.String()
}

// defaultActor is who the CLI records in incident history: $EVP_ACTOR, else
// the OS user.
func defaultActor() string {
	if a := strings.TrimSpace(os.Getenv("EVP_ACTOR")); a != "" {
		return a
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "cli"
}

// awsConfig is the AWS configuration of a command aimed at a stage: the
// default chain, with the named profile and region when given.
func awsConfig(ctx context.Context, profile, region string) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(profile))
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	return config.LoadDefaultConfig(ctx, opts...)
}
