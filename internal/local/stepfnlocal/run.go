package stepfnlocal

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
)

// run is one execution being interpreted.
type run struct {
	r   *Runner
	ex  *execution
	ctx context.Context
}

func (x *run) record(types ...string) { x.r.record(x.ex, types...) }

// authorize tells Runner.Calls of a task's service call.
func (x *run) authorize(action, resource string) {
	if x.r.Calls != nil {
		x.r.Calls(x.ex.MachineARN, action, resource)
	}
}

// states runs a definition from its StartAt to its end.
func (x *run) states(d Definition, input any, ctxObj map[string]any) (any, *Failure) {
	name := d.StartAt
	for {
		if err := x.ctx.Err(); err != nil {
			return nil, &Failure{Error: "States.Runtime", Cause: "the local stack stopped"}
		}
		st, ok := d.States[name]
		if !ok {
			return nil, runtimeError("no state %q", name)
		}
		out, next, fail := x.state(st, input, ctxObj)
		if fail != nil {
			return nil, fail
		}
		if next == "" {
			return out, nil
		}
		input, name = out, next
	}
}

// state runs one state: its output, and the next state's name ("" at the
// end).
func (x *run) state(st map[string]any, input any, ctxObj map[string]any) (any, string, *Failure) {
	next, _ := st["Next"].(string)
	if end, _ := st["End"].(bool); end {
		next = ""
	}
	typ, _ := st["Type"].(string)
	switch typ {
	case "Pass":
		x.record("PassStateEntered")
		res := input
		if p, ok := st["Parameters"]; ok {
			v, err := eval(p, input, ctxObj)
			if err != nil {
				return nil, "", err
			}
			res = v
		}
		out, err := resultPath(st, input, res)
		x.record("PassStateExited")
		return out, next, err
	case "Choice":
		x.record("ChoiceStateEntered")
		to, err := choose(st, input, ctxObj)
		x.record("ChoiceStateExited")
		return input, to, err
	case "Task":
		x.record("TaskStateEntered")
		params := input
		if p, ok := st["Parameters"]; ok {
			v, err := eval(p, input, ctxObj)
			if err != nil {
				return nil, "", err
			}
			params = v
		}
		res, err := x.task(st["Resource"], params)
		if err != nil {
			return nil, "", err
		}
		if sel, ok := st["ResultSelector"]; ok {
			if res, err = eval(sel, res, ctxObj); err != nil {
				return nil, "", err
			}
		}
		out, err := resultPath(st, input, res)
		x.record("TaskStateExited")
		return out, next, err
	case "Map":
		out, err := x.mapState(st, input, ctxObj)
		return out, next, err
	case "Succeed":
		x.record("SucceedStateEntered")
		out := input
		if p, ok := st["OutputPath"].(string); ok {
			v, found := get(p, input, ctxObj)
			if !found {
				return nil, "", runtimeError("OutputPath %s could not be found in the input", p)
			}
			out = v
		}
		x.record("SucceedStateExited")
		return out, "", nil
	case "Fail":
		x.record("FailStateEntered")
		f := &Failure{}
		f.Error, _ = st["Error"].(string)
		f.Cause, _ = st["Cause"].(string)
		if p, ok := st["ErrorPath"].(string); ok {
			v, _ := get(p, input, ctxObj)
			f.Error, _ = v.(string)
		}
		if p, ok := st["CausePath"].(string); ok {
			v, _ := get(p, input, ctxObj)
			f.Cause, _ = v.(string)
		}
		return nil, "", f
	}
	return nil, "", runtimeError("state type %q is not supported here", typ)
}

// choose picks a Choice state's next state.
func choose(st map[string]any, input any, ctxObj map[string]any) (string, *Failure) {
	rules, _ := st["Choices"].([]any)
	for _, c := range rules {
		rule, _ := c.(map[string]any)
		variable, _ := rule["Variable"].(string)
		v, present := get(variable, input, ctxObj)
		var match bool
		switch {
		case rule["IsPresent"] != nil:
			want, _ := rule["IsPresent"].(bool)
			match = present == want
		case rule["BooleanEquals"] != nil:
			b, ok := v.(bool)
			match = present && ok && b == rule["BooleanEquals"]
		case rule["NumericGreaterThanEquals"] != nil:
			f, ok := v.(float64)
			limit, _ := rule["NumericGreaterThanEquals"].(float64)
			match = present && ok && f >= limit
		default:
			return "", runtimeError("choice rule %v is not supported here", rule)
		}
		if !match {
			continue
		}
		to, _ := rule["Next"].(string)
		return to, nil
	}
	if def, _ := st["Default"].(string); def != "" {
		return def, nil
	}
	return "", &Failure{Error: "States.NoChoiceMatched", Cause: "no choice rule matched and there is no Default"}
}

// task runs a Task state's resource.
func (x *run) task(resource any, params any) (any, *Failure) {
	res, _ := resource.(string)
	switch {
	case strings.HasPrefix(res, "arn:aws:lambda:"):
		x.record("LambdaFunctionScheduled", "LambdaFunctionStarted")
		x.authorize("lambda:InvokeFunction", res)
		payload, _ := json.Marshal(params)
		out, err := x.r.invoke(x.ctx, res, payload)
		if err != nil {
			x.record("LambdaFunctionFailed")
			return nil, &Failure{Error: "States.TaskFailed", Cause: err.Error()}
		}
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			x.record("LambdaFunctionFailed")
			return nil, &Failure{Error: "States.TaskFailed", Cause: "the function's response is not JSON"}
		}
		x.record("LambdaFunctionSucceeded")
		return v, nil
	case res == "arn:aws:states:::aws-sdk:sfn:startExecution":
		x.record("TaskScheduled", "TaskStarted")
		p, _ := params.(map[string]any)
		machine, _ := p["StateMachineArn"].(string)
		name, _ := p["Name"].(string)
		input, _ := p["Input"].(string)
		x.authorize("states:StartExecution", machine)
		ex, err := x.r.StartExecution(machine, name, []byte(input))
		if err != nil {
			x.record("TaskFailed")
			code := "States.TaskFailed"
			if ae, ok := err.(*APIError); ok {
				code = "Sfn." + ae.Code + "Exception"
			}
			return nil, &Failure{Error: code, Cause: err.Error()}
		}
		x.record("TaskSucceeded")
		return map[string]any{"ExecutionArn": ex.ARN, "StartDate": ex.StartDate.UTC().Format("2006-01-02T15:04:05.000Z")}, nil
	}
	return nil, runtimeError("task resource %q is not supported here", res)
}

// mapState runs an inline Map: its item processor once per item, at most
// MaxConcurrency at a time; the result is the items' outputs in order.
func (x *run) mapState(st map[string]any, input any, ctxObj map[string]any) (any, *Failure) {
	x.record("MapStateEntered")
	path, _ := st["ItemsPath"].(string)
	if path == "" {
		path = "$"
	}
	items, found := get(path, input, ctxObj)
	list, isList := items.([]any)
	if !found || !isList {
		return nil, runtimeError("the Map's ItemsPath %s is not an array in the input", path)
	}
	raw, _ := json.Marshal(firstOf(st["ItemProcessor"], st["Iterator"]))
	proc, err := Parse(raw)
	if err != nil {
		return nil, runtimeError("the Map's item processor: %v", err)
	}
	limit := len(list)
	if c, ok := st["MaxConcurrency"].(float64); ok && c > 0 {
		limit = int(c)
	}
	x.record("MapStateStarted")
	results := make([]any, len(list))
	fails := make([]*Failure, len(list))
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i, item := range list {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			x.record("MapIterationStarted")
			itemCtx := map[string]any{"Execution": ctxObj["Execution"], "StateMachine": ctxObj["StateMachine"],
				"Map": map[string]any{"Item": map[string]any{"Index": float64(i), "Value": item}}}
			in := item
			if sel, ok := firstOf(st["ItemSelector"], st["Parameters"]).(map[string]any); ok {
				v, err := eval(sel, input, itemCtx)
				if err != nil {
					fails[i] = err
					x.record("MapIterationFailed")
					return
				}
				in = v
			}
			results[i], fails[i] = x.states(proc, in, itemCtx)
			if fails[i] != nil {
				x.record("MapIterationFailed")
				return
			}
			x.record("MapIterationSucceeded")
		})
	}
	wg.Wait()
	for _, f := range fails {
		if f != nil {
			x.record("MapStateFailed")
			return nil, f
		}
	}
	x.record("MapStateSucceeded")
	out, fail := resultPath(st, input, any(results))
	x.record("MapStateExited")
	return out, fail
}

func firstOf(a, b any) any {
	if a != nil {
		return a
	}
	return b
}

// resultPath places a state's result into its input (ResultPath "$" or
// absent: the result replaces it).
func resultPath(st map[string]any, input, result any) (any, *Failure) {
	p, ok := st["ResultPath"].(string)
	if !ok || p == "$" {
		return result, nil
	}
	if !strings.HasPrefix(p, "$.") {
		return nil, runtimeError("ResultPath %s is not supported here", p)
	}
	root, isObj := deepCopy(input).(map[string]any)
	if !isObj {
		return nil, &Failure{Error: "States.ResultPathMatchFailure", Cause: "the state's input is not an object"}
	}
	keys := strings.Split(p[2:], ".")
	cur := root
	for _, k := range keys[:len(keys)-1] {
		child, ok := cur[k].(map[string]any)
		if !ok {
			child = map[string]any{}
			cur[k] = child
		}
		cur = child
	}
	cur[keys[len(keys)-1]] = result
	return root, nil
}

func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// eval evaluates a Parameters-like template: fields ending in ".$" take
// the value of their path or intrinsic.
func eval(tpl, input any, ctxObj map[string]any) (any, *Failure) {
	switch t := tpl.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, v := range t {
			if name, ok := strings.CutSuffix(k, ".$"); ok {
				e, _ := v.(string)
				val, err := expr(e, input, ctxObj)
				if err != nil {
					return nil, err
				}
				out[name] = val
				continue
			}
			val, err := eval(v, input, ctxObj)
			if err != nil {
				return nil, err
			}
			out[k] = val
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, v := range t {
			val, err := eval(v, input, ctxObj)
			if err != nil {
				return nil, err
			}
			out[i] = val
		}
		return out, nil
	}
	return tpl, nil
}
