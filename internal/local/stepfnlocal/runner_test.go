package stepfnlocal_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/stepfnlocal"
)

const (
	machineARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:doubler"
	doubleARN  = "arn:aws:lambda:eu-west-1:123456789012:function:double"
)

// A definition using every supported state: it doubles each number of
// its input (a Lambda task in a Map), sums them, and hands the rest of a
// long list to a new execution of itself, two numbers per execution.
const doubler = `{
  "StartAt": "Continued?",
  "States": {
    "Continued?": {"Type": "Choice", "Choices": [{"Variable": "$.rest", "IsPresent": true, "Next": "Take"}], "Default": "Begin"},
    "Begin": {"Type": "Pass", "Parameters": {"rest.$": "$.numbers", "sum": 0, "part": 1, "token.$": "$$.Execution.Id"}, "Next": "Take"},
    "Take": {"Type": "Task", "Resource": "arn:aws:lambda:eu-west-1:123456789012:function:split", "Parameters": {"list.$": "$.rest"}, "ResultPath": "$.split", "Next": "Double"},
    "Double": {"Type": "Map", "ItemsPath": "$.split.head", "MaxConcurrency": 2, "ItemSelector": {"n.$": "$$.Map.Item.Value", "part.$": "$.part"},
      "ItemProcessor": {"StartAt": "Twice", "States": {"Twice": {"Type": "Task", "Resource": "arn:aws:lambda:eu-west-1:123456789012:function:double", "End": true}}},
      "ResultPath": "$.doubled", "Next": "Add"},
    "Add": {"Type": "Task", "Resource": "arn:aws:lambda:eu-west-1:123456789012:function:add", "Parameters": {"sum.$": "$.sum", "items.$": "$.doubled"}, "ResultSelector": {"value.$": "$.total"}, "ResultPath": "$.added", "Next": "More?"},
    "More?": {"Type": "Choice", "Choices": [{"Variable": "$.split.empty", "BooleanEquals": true, "Next": "Done"}, {"Variable": "$.part", "NumericGreaterThanEquals": 99, "Next": "Refuse"}], "Default": "Hand over"},
    "Hand over": {"Type": "Pass", "Parameters": {"rest.$": "$.split.tail", "sum.$": "$.added.value", "token.$": "$.token", "part.$": "States.MathAdd($.part, 1)"}, "Next": "Continue"},
    "Continue": {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:sfn:startExecution",
      "Parameters": {"StateMachineArn": "` + machineARN + `", "Name.$": "States.Format('d-{}-{}', States.Hash($.token, 'SHA-1'), $.part)", "Input.$": "States.JsonToString($)"},
      "ResultSelector": {"next.$": "$.ExecutionArn"}, "ResultPath": "$.continued", "Next": "Continued"},
    "Continued": {"Type": "Succeed", "OutputPath": "$.continued"},
    "Done": {"Type": "Succeed", "OutputPath": "$.added"},
    "Refuse": {"Type": "Fail", "Error": "too_long", "Cause": "too many parts"}
  }
}`

// invoke is the functions the definition calls.
func invoke(calls *atomic.Int64) stepfnlocal.Invoker {
	return func(_ context.Context, fn string, payload []byte) ([]byte, error) {
		calls.Add(1)
		var in map[string]any
		if err := json.Unmarshal(payload, &in); err != nil {
			return nil, err
		}
		switch fn[strings.LastIndexByte(fn, ':')+1:] {
		case "split":
			list, _ := in["list"].([]any)
			head, tail := list[:min(2, len(list))], list[min(2, len(list)):]
			return json.Marshal(map[string]any{"head": head, "tail": tail, "empty": len(tail) == 0})
		case "double":
			n, _ := in["n"].(float64)
			if n < 0 {
				return nil, errors.New("negative")
			}
			return json.Marshal(2 * n)
		case "add":
			sum, _ := in["sum"].(float64)
			for _, v := range in["items"].([]any) {
				sum += v.(float64)
			}
			return json.Marshal(map[string]any{"total": sum})
		}
		return nil, errors.New("no function " + fn)
	}
}

func setup(t *testing.T) (*sfn.Client, *atomic.Int64) {
	t.Helper()
	calls := new(atomic.Int64)
	r := stepfnlocal.NewRunner(invoke(calls))
	def, err := stepfnlocal.Parse([]byte(doubler))
	require.NoError(t, err)
	require.NoError(t, r.Register(machineARN, def))
	srv := httptest.NewServer(r)
	t.Cleanup(func() { srv.Close(); r.Close() })
	return awslocal.NewSFNClient(awslocal.NewConfig(), srv.URL), calls
}

func run(t *testing.T, c *sfn.Client, name, input string) *sfn.DescribeExecutionOutput {
	t.Helper()
	ctx := context.Background()
	start, err := c.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(machineARN), Name: aws.String(name), Input: aws.String(input)})
	require.NoError(t, err)
	var d *sfn.DescribeExecutionOutput
	require.Eventually(t, func() bool {
		d, err = c.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: start.ExecutionArn})
		require.NoError(t, err)
		return d.Status != sfntypes.ExecutionStatusRunning
	}, 5*time.Second, 5*time.Millisecond)
	return d
}

// Through the SDK's sfn client: an execution runs its Map and tasks,
// hands the rest to a new execution (named from its token, part 2) and
// ends with its ARN; the last part's output is the sum; the history has
// one MapIterationSucceeded per item.
func TestExecutionsContinueThroughTheAPI(t *testing.T) {
	t.Parallel()
	c, _ := setup(t)
	ctx := context.Background()
	first := run(t, c, "first", `{"numbers": [1, 2, 3, 4, 5]}`)
	require.Equal(t, sfntypes.ExecutionStatusSucceeded, first.Status, aws.ToString(first.Cause))
	var out struct{ Next string }
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(first.Output)), &out))
	require.Contains(t, out.Next, ":execution:doubler:d-")
	require.True(t, strings.HasSuffix(out.Next, "-2"), out.Next)

	total := 0.0
	iterations := 0
	for exec := aws.String(out.Next); ; {
		var d *sfn.DescribeExecutionOutput
		require.Eventually(t, func() bool {
			var err error
			d, err = c.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: exec})
			require.NoError(t, err)
			return d.Status != sfntypes.ExecutionStatusRunning
		}, 5*time.Second, 5*time.Millisecond)
		require.Equal(t, sfntypes.ExecutionStatusSucceeded, d.Status, aws.ToString(d.Cause))
		p := sfn.NewGetExecutionHistoryPaginator(c, &sfn.GetExecutionHistoryInput{ExecutionArn: exec, MaxResults: 7})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			require.NoError(t, err)
			for _, ev := range page.Events {
				if ev.Type == sfntypes.HistoryEventTypeMapIterationSucceeded {
					iterations++
				}
			}
		}
		var o struct {
			Next  string
			Value float64
		}
		require.NoError(t, json.Unmarshal([]byte(aws.ToString(d.Output)), &o))
		if o.Next == "" {
			total = o.Value
			break
		}
		exec = aws.String(o.Next)
	}
	require.Equal(t, 30.0, total, "2·(1+2+3+4+5)")
	require.Equal(t, 3, iterations, "items 3, 4 and 5 in parts 2 and 3")
}

// A failing task fails the execution with States.TaskFailed; a Fail state
// with its error and cause; a bad name, a reused name and an unknown
// machine are API errors with Step Functions' codes.
func TestFailuresAndAPIErrors(t *testing.T) {
	t.Parallel()
	c, calls := setup(t)
	ctx := context.Background()
	failed := run(t, c, "negative", `{"numbers": [1, -2]}`)
	require.Equal(t, sfntypes.ExecutionStatusFailed, failed.Status)
	require.Equal(t, "States.TaskFailed", aws.ToString(failed.Error))
	require.Contains(t, aws.ToString(failed.Cause), "negative")

	refused := run(t, c, "refused", `{"rest": [1, 2, 3], "sum": 0, "part": 99, "token": "t"}`)
	require.Equal(t, sfntypes.ExecutionStatusFailed, refused.Status)
	require.Equal(t, "too_long", aws.ToString(refused.Error))
	require.Equal(t, "too many parts", aws.ToString(refused.Cause))

	before := calls.Load()
	_, err := c.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(machineARN), Name: aws.String("refused"), Input: aws.String(`{}`)})
	var exists *sfntypes.ExecutionAlreadyExists
	require.ErrorAs(t, err, &exists)
	_, err = c.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(machineARN), Name: aws.String("has space"), Input: aws.String(`{}`)})
	var badName *sfntypes.InvalidName
	require.ErrorAs(t, err, &badName)
	_, err = c.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(machineARN + "x"), Input: aws.String(`{}`)})
	var noMachine *sfntypes.StateMachineDoesNotExist
	require.ErrorAs(t, err, &noMachine)
	_, err = c.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(machineARN), Input: aws.String(`{nope`)})
	var badInput *sfntypes.InvalidExecutionInput
	require.ErrorAs(t, err, &badInput)
	_, err = c.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(machineARN + ":nope")})
	var noExec *sfntypes.ExecutionDoesNotExist
	require.ErrorAs(t, err, &noExec)
	require.Equal(t, before, calls.Load(), "refused starts ran nothing")
}
