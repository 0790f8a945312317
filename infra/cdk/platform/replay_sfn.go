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
	// ReplayPagesPerExecution is how many pages one execution replays
	// before it hands the rest to a new execution of the state machine
	// (TestReplayHistoryFitsTheQuota: the worst-case history of that many
	// pages stays under Step Functions' 25,000 events per execution).
	ReplayPagesPerExecution = 10
	// replayExecutionTimeout bounds one execution (ReplayPagesPerExecution
	// pages).
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
// sfnRetryableErrors are the Step Functions API errors of StartExecution
// that can succeed on retry (the API reference's ExecutionLimitExceeded and
// KmsThrottling, and the common Throttling, ServiceUnavailable and
// InternalFailure errors; SfnException is the integration's unmodelled
// service error).
var sfnRetryableErrors = []string{
	"Sfn.ExecutionLimitExceededException", "Sfn.KmsThrottlingException", "Sfn.ThrottlingException",
	"Sfn.ServiceUnavailableException", "Sfn.InternalFailureException", "Sfn.SfnException",
}

// lambdaRetryableErrors are the Lambda service errors a task retries: the
// function's own errors are answers (they fail the execution with their
// code), not things to repeat.
var lambdaRetryableErrors = []string{
	"Lambda.ClientExecutionTimeoutException", "Lambda.ServiceException", "Lambda.AWSLambdaException",
	"Lambda.SdkClientException", "Lambda.TooManyRequestsException",
}

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
			Errors:      jsii.Strings(lambdaRetryableErrors...),
			Interval:    duration(2 * time.Second),
			MaxAttempts: jsii.Number(float64(retries)),
			BackoffRate: jsii.Number(2),
		})
		return task
	}
	// An execution either starts a request (its input is the request) or
	// continues one another execution handed over ({"continuation": …}).
	// The state carries the request, the selection cursor, the running
	// totals (counts, and the first few ids: replay.Summary), the request
	// token (the first execution's id, kept across the chain so a replay-one
	// retried in any part never replays an incident twice), the part number
	// and the pages this execution has replayed.
	start := awsstepfunctions.NewPass(s, jsii.String("ReplayStart"), &awsstepfunctions.PassProps{
		StateName: jsii.String("Start"),
		Comment:   jsii.String("The execution input is the replay request"),
		Parameters: &map[string]any{
			"request.$": "$$.Execution.Input",
			"cursor":    "",
			// An empty summary: CDK drops a null from Parameters, and
			// summarize's "$.totals" must exist on the first page.
			"totals":  map[string]any{"selected": 0},
			"token.$": "$$.Execution.Id",
			"part":    1,
			"pages":   0,
		},
	})
	resume := awsstepfunctions.NewPass(s, jsii.String("ReplayResume"), &awsstepfunctions.PassProps{
		StateName: jsii.String("Resume"),
		Comment:   jsii.String("Continue a request the previous execution handed over"),
		Parameters: &map[string]any{
			"request.$": "$.continuation.request",
			"cursor.$":  "$.continuation.cursor",
			"totals.$":  "$.continuation.totals",
			"token.$":   "$.continuation.token",
			"part.$":    "$.continuation.part",
			"pages":     0,
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
			"requestToken.$": "$.token",
		}, "$", replayOneRetries)
	each := awsstepfunctions.NewMap(s, jsii.String("ReplayPage"), &awsstepfunctions.MapProps{
		StateName:      jsii.String("Replay page"),
		Comment:        jsii.String("Replay the page's incidents, a bounded number at a time"),
		ItemsPath:      jsii.String("$.page.incidentIds"),
		ItemSelector:   &map[string]any{"incidentId.$": "$$.Map.Item.Value", "request.$": "$.request", "token.$": "$.token"},
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
			"token.$":   "$.token",
			"part.$":    "$.part",
			"pages.$":   "States.MathAdd($.pages, 1)",
		},
	})
	done := awsstepfunctions.NewSucceed(s, jsii.String("ReplayDone"), &awsstepfunctions.SucceedProps{
		StateName:  jsii.String("Done"),
		Comment:    jsii.String("Output: the replay summary (selected; replayed, skipped by reason and errors counted; the first of each listed)"),
		OutputPath: jsii.String("$.totals"),
	})
	// Handing over: a new execution of this state machine continues from
	// the cursor with the totals so far. Its name derives from the request
	// token and the part, so a retried StartExecution finds the execution
	// it already started instead of starting a second one.
	handover := awsstepfunctions.NewPass(s, jsii.String("ReplayHandover"), &awsstepfunctions.PassProps{
		StateName: jsii.String("Hand over"),
		Parameters: &map[string]any{
			"continuation": map[string]any{
				"request.$": "$.request",
				"cursor.$":  "$.cursor",
				"totals.$":  "$.totals",
				"token.$":   "$.token",
				"part.$":    "States.MathAdd($.part, 1)",
			},
		},
	})
	selfArn := p.Stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("states"), Resource: jsii.String("stateMachine"), ResourceName: jsii.String(p.Stage.Prefix() + "-replay"),
		ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
	continueAsNew := awsstepfunctionstasks.NewCallAwsService(s, jsii.String("ReplayContinue"), &awsstepfunctionstasks.CallAwsServiceProps{
		StateName: jsii.String("Continue as a new execution"),
		Comment:   jsii.String("Start the next part of this request; this execution ends with its handle"),
		Service:   jsii.String("sfn"),
		Action:    jsii.String("startExecution"),
		Parameters: &map[string]any{
			"StateMachineArn": selfArn,
			"Name.$":          "States.Format('replay-{}-part-{}', States.Hash($.continuation.token, 'SHA-1'), $.continuation.part)",
			"Input.$":         "States.JsonToString($)",
		},
		IamResources:   &[]*string{selfArn},
		ResultSelector: &map[string]any{"continuedAs.$": "$.ExecutionArn"},
		ResultPath:     jsii.String("$.next"),
	})
	// Only what a later attempt can fix: StartExecution's throttles and
	// limits and the service's own failures, named as the SDK integration
	// names them (Sfn.<Error>Exception). Not States.TaskFailed: that
	// includes ExecutionAlreadyExists, access denied and invalid input,
	// which fail the same way every time.
	continueAsNew.AddRetry(&awsstepfunctions.RetryProps{
		Errors:      jsii.Strings(sfnRetryableErrors...),
		Interval:    duration(2 * time.Second),
		MaxAttempts: jsii.Number(float64(pageTaskRetries)),
		BackoffRate: jsii.Number(2),
	})
	continued := awsstepfunctions.NewSucceed(s, jsii.String("ReplayContinued"), &awsstepfunctions.SucceedProps{
		StateName: jsii.String("Continued"),
		Comment:   jsii.String("Output: {continuedAs: the next execution's ARN, continuation: the totals so far}; the last part's output is the whole summary"),
	})
	shapeContinued := awsstepfunctions.NewPass(s, jsii.String("ReplayContinuedOutput"), &awsstepfunctions.PassProps{
		StateName:  jsii.String("Continued output"),
		Parameters: &map[string]any{"continuedAs.$": "$.next.continuedAs", "totals.$": "$.continuation.totals"},
	})
	budget := awsstepfunctions.NewChoice(s, jsii.String("ReplayBudget"), &awsstepfunctions.ChoiceProps{StateName: jsii.String("Pages left in this execution?")}).
		When(awsstepfunctions.Condition_NumberGreaterThanEquals(jsii.String("$.pages"), jsii.Number(ReplayPagesPerExecution)),
			handover.Next(continueAsNew).Next(shapeContinued).Next(continued), nil).
		Otherwise(selectPage)
	more := awsstepfunctions.NewChoice(s, jsii.String("ReplayMore"), &awsstepfunctions.ChoiceProps{StateName: jsii.String("More pages?")}).
		When(awsstepfunctions.Condition_BooleanEquals(jsii.String("$.page.done"), jsii.Bool(true)), done, nil).
		Otherwise(next.Next(budget))
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
	begin := awsstepfunctions.NewChoice(s, jsii.String("ReplayBegin"), &awsstepfunctions.ChoiceProps{StateName: jsii.String("Continued?")}).
		When(awsstepfunctions.Condition_IsPresent(jsii.String("$.continuation")), resume.Next(selectPage), nil).
		Otherwise(start.Next(selectPage))
	selectPage.Next(checked)
	definition := begin

	logs := awslogs.NewLogGroup(s, jsii.String("ReplayStateMachineLogs"), &awslogs.LogGroupProps{
		// The vendedlogs prefix keeps CloudWatch Logs' resource policy
		// small when many state machines log.
		LogGroupName:  jsii.String("/aws/vendedlogs/states/" + p.Stage.Prefix() + "-replay"),
		Retention:     retentionDays[p.Stage.LogRetentionDays],
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	sm := awsstepfunctions.NewStateMachine(s, jsii.String("ReplayStateMachine"), &awsstepfunctions.StateMachineProps{
		StateMachineName: jsii.String(p.Stage.Prefix() + "-replay"),
		Comment:          jsii.String("Replay incidents: select → replay (bounded Map) → summary, continuing as a new execution every few pages. Input: a replay request."),
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
