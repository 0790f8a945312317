package stepfnlocal

import (
	"encoding/json"
	"fmt"
)

// Definition is a state machine definition (or a Map's item processor):
// states are kept as parsed JSON, read as the interpreter needs them.
type Definition struct {
	StartAt string                    `json:"StartAt"`
	States  map[string]map[string]any `json:"States"`
}

// Parse reads a definition (Amazon States Language, JSON).
func Parse(raw []byte) (Definition, error) {
	var d Definition
	if err := json.Unmarshal(raw, &d); err != nil {
		return d, fmt.Errorf("stepfnlocal: definition: %w", err)
	}
	if _, ok := d.States[d.StartAt]; !ok {
		return d, fmt.Errorf("stepfnlocal: definition: StartAt %q names no state", d.StartAt)
	}
	return d, nil
}

// Failure ends an execution: a Fail state's error and cause, or the
// States.* error of a path, intrinsic or task that failed.
type Failure struct{ Error, Cause string }

func runtimeError(format string, args ...any) *Failure {
	return &Failure{Error: "States.Runtime", Cause: fmt.Sprintf(format, args...)}
}
