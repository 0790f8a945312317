package stepfnlocal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Invoker calls a Lambda function (by ARN) with a payload and returns its
// response; a function error is an error.
type Invoker func(ctx context.Context, functionARN string, payload []byte) ([]byte, error)

// Execution statuses.
const (
	StatusRunning   = "RUNNING"
	StatusSucceeded = "SUCCEEDED"
	StatusFailed    = "FAILED"
)

// Execution is one execution's state, as DescribeExecution reports it.
type Execution struct {
	ARN, MachineARN, Name string
	Input                 json.RawMessage
	Status                string
	Output                json.RawMessage
	Error, Cause          string
	StartDate, StopDate   time.Time
}

// HistoryEvent is one event of an execution's history.
type HistoryEvent struct {
	ID        int64
	Type      string
	Timestamp time.Time
}

// Errors of the API calls (their Step Functions error codes in Code).
var (
	ErrStateMachineDoesNotExist = &APIError{Code: "StateMachineDoesNotExist", Message: "no such state machine"}
	ErrExecutionDoesNotExist    = &APIError{Code: "ExecutionDoesNotExist", Message: "no such execution"}
)

// APIError is a Step Functions API error.
type APIError struct{ Code, Message string }

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

// Runner holds state machines and runs their executions, each in its own
// goroutine. Safe for concurrent use.
type Runner struct {
	// Calls, when set, is told of each service call a task makes with its
	// state machine's role (lambda:InvokeFunction on the function's ARN,
	// states:StartExecution on the state machine's), before it is made:
	// the local stack records them for the IAM check. Set it before the
	// first execution starts.
	Calls func(machineARN, action, resource string)

	invoke Invoker
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex
	machines   map[string]Definition
	executions map[string]*execution
}

type execution struct {
	Execution
	history []HistoryEvent
}

// NewRunner returns a runner whose Lambda tasks call invoke.
func NewRunner(invoke Invoker) *Runner {
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{invoke: invoke, ctx: ctx, cancel: cancel, machines: map[string]Definition{}, executions: map[string]*execution{}}
}

// Register adds a state machine under its ARN
// (arn:aws:states:<region>:<account>:stateMachine:<name>).
func (r *Runner) Register(arn string, def Definition) error {
	if !strings.Contains(arn, ":stateMachine:") {
		return fmt.Errorf("stepfnlocal: %q is not a state machine ARN", arn)
	}
	if _, ok := def.States[def.StartAt]; !ok {
		return fmt.Errorf("stepfnlocal: %s: StartAt %q names no state", arn, def.StartAt)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.machines[arn] = def
	return nil
}

// Close stops every running execution and waits for them.
func (r *Runner) Close() {
	r.cancel()
	r.wg.Wait()
}

func executionARN(machineARN, name string) string {
	return strings.Replace(machineARN, ":stateMachine:", ":execution:", 1) + ":" + name
}

// StartExecution starts an execution named name (Step Functions' rules: 1
// to 80 characters, no whitespace or wildcard characters) with a JSON
// input. Starting a running execution's name again with the same input
// returns it; otherwise a used name is ExecutionAlreadyExists.
func (r *Runner) StartExecution(machineARN, name string, input []byte) (Execution, error) {
	if len(input) == 0 {
		input = []byte("{}")
	}
	var in any
	if err := json.Unmarshal(input, &in); err != nil {
		return Execution{}, &APIError{Code: "InvalidExecutionInput", Message: err.Error()}
	}
	if name == "" || len(name) > 80 || strings.ContainsAny(name, " \t\n<>{}[]?*\"#%\\^|~`$&,;:/") {
		return Execution{}, &APIError{Code: "InvalidName", Message: fmt.Sprintf("invalid execution name %q", name)}
	}
	r.mu.Lock()
	def, ok := r.machines[machineARN]
	if !ok {
		r.mu.Unlock()
		return Execution{}, ErrStateMachineDoesNotExist
	}
	arn := executionARN(machineARN, name)
	if ex, ok := r.executions[arn]; ok {
		r.mu.Unlock()
		if ex.Status == StatusRunning && bytes.Equal(ex.Input, input) {
			return ex.Execution, nil
		}
		return Execution{}, &APIError{Code: "ExecutionAlreadyExists", Message: "execution already exists: " + arn}
	}
	ex := &execution{Execution: Execution{ARN: arn, MachineARN: machineARN, Name: name, Input: append(json.RawMessage(nil), input...),
		Status: StatusRunning, StartDate: time.Now()}}
	r.executions[arn] = ex
	r.wg.Add(1)
	r.mu.Unlock()
	r.record(ex, "ExecutionStarted")
	go func() {
		defer r.wg.Done()
		run := &run{r: r, ex: ex, ctx: r.ctx}
		ctxObj := map[string]any{"Execution": map[string]any{"Id": arn, "Name": name, "Input": in, "StartTime": ex.StartDate.UTC().Format(time.RFC3339Nano)},
			"StateMachine": map[string]any{"Id": machineARN}}
		out, fail := run.states(def, in, ctxObj)
		r.mu.Lock()
		defer r.mu.Unlock()
		ex.StopDate = time.Now()
		if fail != nil {
			ex.Status, ex.Error, ex.Cause = StatusFailed, fail.Error, fail.Cause
			ex.recordLocked("ExecutionFailed")
			return
		}
		ex.Output, _ = json.Marshal(out)
		ex.Status = StatusSucceeded
		ex.recordLocked("ExecutionSucceeded")
	}()
	return ex.Execution, nil
}

// Describe returns an execution's state.
func (r *Runner) Describe(arn string) (Execution, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ex, ok := r.executions[arn]
	if !ok {
		return Execution{}, ErrExecutionDoesNotExist
	}
	return ex.Execution, nil
}

// History returns an execution's history events so far, oldest first.
func (r *Runner) History(arn string) ([]HistoryEvent, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ex, ok := r.executions[arn]
	if !ok {
		return nil, ErrExecutionDoesNotExist
	}
	return append([]HistoryEvent(nil), ex.history...), nil
}

// record appends history events.
func (r *Runner) record(ex *execution, types ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ex.recordLocked(types...)
}

func (ex *execution) recordLocked(types ...string) {
	now := time.Now()
	for _, t := range types {
		ex.history = append(ex.history, HistoryEvent{ID: int64(len(ex.history) + 1), Type: t, Timestamp: now})
	}
}
