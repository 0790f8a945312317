package devstack

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"sync"

	"github.com/siteswarm/eventplatform/internal/devapi"
	"github.com/siteswarm/eventplatform/internal/local/stepfnlocal"
)

// StepFunctionsPath serves the Step Functions API calls operators make
// (StartExecution, DescribeExecution, GetExecutionHistory): point an sfn
// client's BaseEndpoint at the stack's URL + StepFunctionsPath.
const StepFunctionsPath = devapi.StepFunctionsPath

// replayDefinition is the dev stage's replay state machine as the CDK app
// synthesizes it (infra/cdk TestReplayDefinitionGolden fails when they
// differ; -update rewrites this file), so what make dev and the tests run
// is what a stage deploys.
//
//go:embed statemachines/replay.asl.json
var replayDefinition []byte

// definitionFunctionPrefix is how the synthesized definition names the
// stage's functions (evp-dev-replay); locally they are named without it.
const definitionFunctionPrefix = "evp-dev-"

var parsedReplay = sync.OnceValues(func() (stepfnlocal.Definition, string) {
	def, err := stepfnlocal.Parse(replayDefinition)
	if err != nil {
		panic(fmt.Sprintf("devstack: the embedded replay definition: %v", err))
	}
	arn := ""
	for _, st := range def.States {
		if p, ok := st["Parameters"].(map[string]any); ok {
			if a, ok := p["StateMachineArn"].(string); ok {
				arn = a
			}
		}
	}
	if arn == "" {
		panic("devstack: the embedded replay definition names no state machine to continue as")
	}
	return def, arn
})

// ReplayStateMachineARN is the replay state machine's ARN locally: the one
// its definition continues itself under.
func ReplayStateMachineARN() string {
	_, arn := parsedReplay()
	return arn
}

// NewReplayStateMachine returns a Step Functions runner holding the replay
// state machine (at ReplayStateMachineARN), whose Lambda tasks call invoke
// with the local function's name. It serves the Step Functions API
// (http.Handler).
func NewReplayStateMachine(invoke func(ctx context.Context, function string, payload []byte) ([]byte, error)) (*stepfnlocal.Runner, error) {
	def, arn := parsedReplay()
	r := stepfnlocal.NewRunner(func(ctx context.Context, fnARN string, payload []byte) ([]byte, error) {
		i := strings.LastIndex(fnARN, ":function:")
		if i < 0 {
			return nil, fmt.Errorf("not a function ARN: %s", fnARN)
		}
		return invoke(ctx, strings.TrimPrefix(fnARN[i+len(":function:"):], definitionFunctionPrefix), payload)
	})
	if err := r.Register(arn, def); err != nil {
		return nil, err
	}
	return r, nil
}

// startStepFunctions serves the replay state machine, its Lambda tasks
// invoking the stack's functions.
func (s *Stack) startStepFunctions() (err error) {
	if s.stepFunctions, err = NewReplayStateMachine(s.Invoke); err != nil {
		return err
	}
	s.recordStateMachine(s.stepFunctions)
	if err := s.handle("POST "+StepFunctionsPath, s.stepFunctions); err != nil {
		return err
	}
	return s.handle("POST "+StepFunctionsPath+"/", s.stepFunctions)
}
