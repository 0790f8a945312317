package platform

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctionstasks"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/replay"
)

const (
	// ReplayMapConcurrency bounds the incidents one execution replays at
	// once (each is a few DynamoDB writes and one SendMessage).
	ReplayMapConcurrency = 10
	// replayExecutionTimeout bounds one execution (MaxLimit incidents).
	replayExecutionTimeout = time.Hour
	// Retries of Lambda service errors: the page tasks run once a page,
	// replay-one once an incident, so its retries bound the worst-case
	// history of an execution (TestReplayHistoryFitsTheQuota: with 6, as
	// CDK's default retry has, a 1,000-incident replay could exceed the
	// 25,000-event quota).
	pageTaskRetries  = 6
	replayOneRetries = 3
)

// newReplayStateMachine creates the replay state machine. Its execution
// input is a replay request, exactly what `evp dlq replay` sends:
//
//	{"tenantId": "acme", "topic": "billing.events", "since": "24h", "dryRun": true}
//	{"incidentIds": ["…", "…"], "actor": "alice", "note": "subscriber fixed"}
//
// It pages through the selection (select), replays each page's incidents
// in a Map with bounded concurrency (replay-one), folds each page into the
// running summary (summarize) and ends with the summary as output. Logging
// (ALL events, no execution data: requests and outcomes stay out of the
// logs) and X-Ray tracing are on.
func (p *Platform) newReplayStateMachine(fn *Function) {
	s := p.Stack
	invoke := func(id, comment string, payload map[string]any, resultPath string, retries int) awsstepfunctionstasks.LambdaInvoke {
		task := awsstepfunctionstasks.NewLambdaInvoke(s, jsii.String(id), &awsstepfunctionstasks.LambdaInvokeProps{
			LambdaFunction:      fn.Fn,
			Comment:             jsii.String(comment),
			Payload:             awsstepfunctions.TaskInput_FromObject(&payload),
			PayloadResponseOnly: jsii.Bool(true),
			ResultPath:          jsii.String(resultPath),
			// Retried below with a bounded count: every attempt is three
			// history events, and an execution holds 25,000.
			RetryOnServiceExceptions: jsii.Bool(false),
		})
		// Lambda service errors (throttles, 5xx) are retried by the task;
		// a replay call's own error (bad request) is an answer that fails
		// the execution with its code.
		task.AddRetry(&awsstepfunctions.RetryProps{
			Errors:      jsii.Strings("Lambda.ClientExecutionTimeoutException", "Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException"),
			Interval:    duration(2 * time.Second),
			MaxAttempts: jsii.Number(float64(retries)),
			BackoffRate: jsii.Number(2),
		})
		return task
	}
	start := awsstepfunctions.NewPass(s, jsii.String("ReplayStart"), &awsstepfunctions.PassProps{
		StateName: jsii.String("Start"),
		Comment:   jsii.String("The execution input is the replay request"),
		Parameters: &map[string]any{
			"request.$": "$$.Execution.Input",
			"cursor":    "",
			"totals":    nil,
		},
	})
	selectPage := invoke("ReplaySelect", "Select the next page of incidents",
		map[string]any{
			"action":    operator.ActionSelect,
			"request.$": "$.request",
			"cursor.$":  "$.cursor",
			"pageSize":  replay.DefaultPageSize,
		}, "$.page", pageTaskRetries)
	replayOne := invoke("ReplayOne", "Replay one incident",
		map[string]any{
			"action":       operator.ActionReplayOne,
			"request.$":    "$.request",
			"incidentId.$": "$.incidentId",
			// A retried step is the same request: it never starts a
			// second replay of an incident (replay.Request.Token).
			"requestToken.$": "$$.Execution.Id",
		}, "$", replayOneRetries)
	each := awsstepfunctions.NewMap(s, jsii.String("ReplayPage"), &awsstepfunctions.MapProps{
		StateName:      jsii.String("Replay page"),
		Comment:        jsii.String("Replay the page's incidents, a bounded number at a time"),
		ItemsPath:      jsii.String("$.page.incidentIds"),
		ItemSelector:   &map[string]any{"incidentId.$": "$$.Map.Item.Value", "request.$": "$.request"},
		MaxConcurrency: jsii.Number(ReplayMapConcurrency),
		ResultPath:     jsii.String("$.results"),
	})
	each.ItemProcessor(replayOne, nil)
	summarize := invoke("ReplaySummarize", "Fold the page's outcomes into the summary",
		map[string]any{
			"action":     operator.ActionSummarize,
			"request.$":  "$.request",
			"results.$":  "$.results",
			"totals.$":   "$.totals",
			"selected.$": "$.page.selected",
		}, "$.totals", pageTaskRetries)
	next := awsstepfunctions.NewPass(s, jsii.String("ReplayNextPage"), &awsstepfunctions.PassProps{
		StateName: jsii.String("Next page"),
		Parameters: &map[string]any{
			"request.$": "$.request",
			"cursor.$":  "$.page.cursor",
			"totals.$":  "$.totals",
		},
	})
	done := awsstepfunctions.NewSucceed(s, jsii.String("ReplayDone"), &awsstepfunctions.SucceedProps{
		StateName:  jsii.String("Done"),
		Comment:    jsii.String("Output: the replay summary (selected, replayed, skipped with reasons, errors)"),
		OutputPath: jsii.String("$.totals"),
	})
	more := awsstepfunctions.NewChoice(s, jsii.String("ReplayMore"), &awsstepfunctions.ChoiceProps{StateName: jsii.String("More pages?")}).
		When(awsstepfunctions.Condition_BooleanEquals(jsii.String("$.page.done"), jsii.Bool(true)), done, nil).
		Otherwise(next.Next(selectPage))
	// A request the replay function refuses (bad input) is an answer with
	// an error code, not a function error: fail the execution with it.
	refused := awsstepfunctions.NewFail(s, jsii.String("ReplayRefused"), &awsstepfunctions.FailProps{
		StateName: jsii.String("Request refused"),
		Comment:   jsii.String("The replay request was refused; the cause is the replay function's error code and message"),
		ErrorPath: jsii.String("$.page.error.code"),
		CausePath: jsii.String("$.page.error.message"),
	})
	checked := awsstepfunctions.NewChoice(s, jsii.String("ReplayChecked"), &awsstepfunctions.ChoiceProps{StateName: jsii.String("Refused?")}).
		When(awsstepfunctions.Condition_IsPresent(jsii.String("$.page.error")), refused, nil).
		Otherwise(each.Next(summarize).Next(more))
	definition := start.Next(selectPage).Next(checked)

	logs := awslogs.NewLogGroup(s, jsii.String("ReplayStateMachineLogs"), &awslogs.LogGroupProps{
		// The vendedlogs prefix keeps CloudWatch Logs' resource policy
		// small when many state machines log.
		LogGroupName:  jsii.String("/aws/vendedlogs/states/" + p.Stage.Prefix() + "-replay"),
		Retention:     retentionDays[p.Stage.LogRetentionDays],
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	sm := awsstepfunctions.NewStateMachine(s, jsii.String("ReplayStateMachine"), &awsstepfunctions.StateMachineProps{
		StateMachineName: jsii.String(p.Stage.Prefix() + "-replay"),
		Comment:          jsii.String("Replay incidents: select → replay (bounded Map) → summary. Input: a replay request."),
		DefinitionBody:   awsstepfunctions.DefinitionBody_FromChainable(definition),
		StateMachineType: awsstepfunctions.StateMachineType_STANDARD,
		Timeout:          duration(replayExecutionTimeout),
		TracingEnabled:   jsii.Bool(true),
		Logs: &awsstepfunctions.LogOptions{
			Destination:          logs,
			Level:                awsstepfunctions.LogLevel_ALL,
			IncludeExecutionData: jsii.Bool(false),
		},
	})
	suppressWildcard(sm.Role(), `^Resource::<Replay[0-9A-F]+\.Arn>:\*$`,
		"The LambdaInvoke tasks' grant covers the replay function's unqualified ARN and its versions/aliases (ARN:*), of this one function only.")
	suppressWildcard(sm.Role(), `^Resource::\*$`,
		"Step Functions log delivery (logs:CreateLogDelivery, …) and X-Ray (xray:PutTraceSegments, …) support no resource-level permissions.")
	p.StateMachine = sm
}
