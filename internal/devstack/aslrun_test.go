package devstack_test

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"os"
	"strconv"
	"strings"
	"sync"
)

// aslMachine runs a Step Functions state machine definition (Amazon States
// Language, JSONPath) locally, for the subset the platform's definitions
// use: Pass with Parameters, Choice (IsPresent, BooleanEquals,
// NumericGreaterThanEquals), Lambda tasks (invoked through the local
// stack's Lambda endpoint), sfn:startExecution of itself, inline Map,
// Succeed and Fail; Parameters/ItemSelector/ResultSelector with paths,
// context paths and the intrinsics States.Format, States.Hash,
// States.MathAdd and States.JsonToString; ResultPath and OutputPath. Retry
// is not simulated (no faults here). It exists because no Step Functions
// emulator runs on these machines, and the replay state machine's wiring
// (paths, hand-over between executions) must run somewhere before it is
// deployed. It counts each execution's history events as Step Functions
// would for a run without retries.
type aslMachine struct {
	arn    string
	def    aslDefinition
	invoke func(ctx context.Context, function string, payload []byte) ([]byte, error)

	mu       sync.Mutex
	started  map[string]bool // execution names
	pending  []aslExecution
	finished []aslExecution
}

type aslDefinition struct {
	StartAt string                    `json:"StartAt"`
	States  map[string]map[string]any `json:"States"`
}

type aslExecution struct {
	Name    string
	Input   any
	Output  any
	Error   string
	Cause   string
	History int // events
}

// aslFailure ends an execution (a Fail state, or a task or path error).
type aslFailure struct{ Error, Cause string }

func loadASL(path string) (aslDefinition, error) {
	var d aslDefinition
	raw, err := os.ReadFile(path)
	if err != nil {
		return d, err
	}
	return d, json.Unmarshal(raw, &d)
}

// start queues an execution (as StartExecution does) and returns its ARN;
// a second start with a name already used returns the same ARN.
func (m *aslMachine) start(name string, input any) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started == nil {
		m.started = map[string]bool{}
	}
	if !m.started[name] {
		m.started[name] = true
		m.pending = append(m.pending, aslExecution{Name: name, Input: input})
	}
	return m.executionARN(name)
}

func (m *aslMachine) executionARN(name string) string {
	return strings.Replace(m.arn, ":stateMachine:", ":execution:", 1) + ":" + name
}

// runAll runs queued executions, in order, until none is left (a chain
// of continuations runs to its end).
func (m *aslMachine) runAll(ctx context.Context) []aslExecution {
	for {
		m.mu.Lock()
		if len(m.pending) == 0 {
			out := m.finished
			m.mu.Unlock()
			return out
		}
		ex := m.pending[0]
		m.pending = m.pending[1:]
		m.mu.Unlock()
		r := &aslRun{m: m, ctx: ctx, ctxObj: map[string]any{"Execution": map[string]any{
			"Id": m.executionARN(ex.Name), "Name": ex.Name, "Input": ex.Input}}}
		r.count(2) // ExecutionStarted, ExecutionSucceeded/Failed
		out, fail := r.run(m.def, ex.Input)
		ex.Output, ex.History = out, int(r.history)
		if fail != nil {
			ex.Error, ex.Cause = fail.Error, fail.Cause
		}
		m.mu.Lock()
		m.finished = append(m.finished, ex)
		m.mu.Unlock()
	}
}

type aslRun struct {
	m       *aslMachine
	ctx     context.Context
	ctxObj  map[string]any
	mu      sync.Mutex
	history int64
}

func (r *aslRun) count(n int) {
	r.mu.Lock()
	r.history += int64(n)
	r.mu.Unlock()
}

func (r *aslRun) run(d aslDefinition, input any) (any, *aslFailure) {
	return r.runWith(d, input, r.ctxObj)
}

func (r *aslRun) runWith(d aslDefinition, input any, ctxObj map[string]any) (any, *aslFailure) {
	name := d.StartAt
	for {
		st, ok := d.States[name]
		if !ok {
			return nil, &aslFailure{"States.Runtime", "no state " + name}
		}
		out, next, fail := r.step(st, input, ctxObj)
		if fail != nil {
			return nil, fail
		}
		if next == "" {
			return out, nil
		}
		input, name = out, next
	}
}

// step runs one state: its output, and the next state ("" at the end).
func (r *aslRun) step(st map[string]any, input any, ctxObj map[string]any) (any, string, *aslFailure) {
	next, _ := st["Next"].(string)
	switch st["Type"] {
	case "Pass":
		r.count(2)
		res := input
		if p, ok := st["Parameters"]; ok {
			v, err := r.eval(p, input, ctxObj)
			if err != nil {
				return nil, "", err
			}
			res = v
		}
		out, err := r.resultPath(st, input, res)
		return out, next, err
	case "Choice":
		r.count(2)
		for _, c := range st["Choices"].([]any) {
			rule := c.(map[string]any)
			v, present := aslGet(rule["Variable"].(string), input, ctxObj)
			match := false
			switch {
			case rule["IsPresent"] != nil:
				match = present == rule["IsPresent"].(bool)
			case rule["BooleanEquals"] != nil:
				b, ok := v.(bool)
				match = present && ok && b == rule["BooleanEquals"].(bool)
			case rule["NumericGreaterThanEquals"] != nil:
				f, ok := v.(float64)
				match = present && ok && f >= rule["NumericGreaterThanEquals"].(float64)
			default:
				return nil, "", &aslFailure{"States.Runtime", fmt.Sprintf("unsupported choice rule %v", rule)}
			}
			if match {
				return input, rule["Next"].(string), nil
			}
		}
		def, _ := st["Default"].(string)
		if def == "" {
			return nil, "", &aslFailure{"States.NoChoiceMatched", "no choice matched"}
		}
		return input, def, nil
	case "Task":
		r.count(5) // entered, scheduled, started, succeeded, exited
		params := input
		if p, ok := st["Parameters"]; ok {
			v, err := r.eval(p, input, ctxObj)
			if err != nil {
				return nil, "", err
			}
			params = v
		}
		res, err := r.task(st["Resource"].(string), params)
		if err != nil {
			return nil, "", err
		}
		if sel, ok := st["ResultSelector"]; ok {
			if res, err = r.eval(sel, res, ctxObj); err != nil {
				return nil, "", err
			}
		}
		out, err := r.resultPath(st, input, res)
		return out, next, err
	case "Map":
		r.count(4)
		items, ok := aslGet(st["ItemsPath"].(string), input, ctxObj)
		list, isList := items.([]any)
		if !ok || !isList {
			return nil, "", &aslFailure{"States.Runtime", "ItemsPath is not an array"}
		}
		var proc aslDefinition
		b, _ := json.Marshal(st["ItemProcessor"])
		_ = json.Unmarshal(b, &proc)
		conc := 0
		if c, ok := st["MaxConcurrency"].(float64); ok {
			conc = int(c)
		}
		if conc <= 0 {
			conc = len(list) + 1
		}
		results := make([]any, len(list))
		fails := make([]*aslFailure, len(list))
		sem := make(chan struct{}, conc)
		var wg sync.WaitGroup
		for i, item := range list {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				r.count(2) // MapIterationStarted, MapIterationSucceeded
				itemCtx := map[string]any{"Execution": ctxObj["Execution"], "Map": map[string]any{"Item": map[string]any{"Index": float64(i), "Value": item}}}
				in := item
				if sel, ok := st["ItemSelector"]; ok {
					v, err := r.eval(sel, input, itemCtx)
					if err != nil {
						fails[i] = err
						return
					}
					in = v
				}
				results[i], fails[i] = r.runWith(proc, in, itemCtx)
			})
		}
		wg.Wait()
		for _, f := range fails {
			if f != nil {
				return nil, "", f
			}
		}
		out, err := r.resultPath(st, input, toAny(results))
		return out, next, err
	case "Succeed":
		r.count(2)
		if p, ok := st["OutputPath"].(string); ok {
			v, present := aslGet(p, input, ctxObj)
			if !present {
				return nil, "", &aslFailure{"States.Runtime", "OutputPath " + p + " not found"}
			}
			return v, "", nil
		}
		return input, "", nil
	case "Fail":
		r.count(2)
		f := &aslFailure{}
		if p, ok := st["ErrorPath"].(string); ok {
			v, _ := aslGet(p, input, ctxObj)
			f.Error, _ = v.(string)
		}
		if p, ok := st["CausePath"].(string); ok {
			v, _ := aslGet(p, input, ctxObj)
			f.Cause, _ = v.(string)
		}
		return nil, "", f
	}
	return nil, "", &aslFailure{"States.Runtime", fmt.Sprintf("unsupported state type %v", st["Type"])}
}

func toAny(xs []any) any { return xs }

// task runs a Task's resource.
func (r *aslRun) task(resource string, params any) (any, *aslFailure) {
	switch {
	case strings.HasPrefix(resource, "arn:aws:lambda:"):
		payload, _ := json.Marshal(params)
		out, err := r.m.invoke(r.ctx, resource, payload)
		if err != nil {
			return nil, &aslFailure{"States.TaskFailed", err.Error()}
		}
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			return nil, &aslFailure{"States.TaskFailed", "response is not JSON: " + string(out)}
		}
		return v, nil
	case resource == "arn:aws:states:::aws-sdk:sfn:startExecution":
		p := params.(map[string]any)
		if p["StateMachineArn"] != r.m.arn {
			return nil, &aslFailure{"Sfn.StateMachineDoesNotExistException", fmt.Sprintf("%v", p["StateMachineArn"])}
		}
		name, _ := p["Name"].(string)
		if name == "" || len(name) > 80 {
			return nil, &aslFailure{"Sfn.InvalidNameException", name}
		}
		var in any
		if err := json.Unmarshal([]byte(p["Input"].(string)), &in); err != nil {
			return nil, &aslFailure{"Sfn.InvalidExecutionInputException", err.Error()}
		}
		return map[string]any{"ExecutionArn": r.m.start(name, in), "StartDate": 0}, nil
	}
	return nil, &aslFailure{"States.Runtime", "unsupported resource " + resource}
}

// resultPath places a state's result into its input.
func (r *aslRun) resultPath(st map[string]any, input, result any) (any, *aslFailure) {
	p, ok := st["ResultPath"].(string)
	if !ok || p == "$" {
		return result, nil
	}
	if !strings.HasPrefix(p, "$.") {
		return nil, &aslFailure{"States.Runtime", "unsupported ResultPath " + p}
	}
	root, isObj := deepCopy(input).(map[string]any)
	if !isObj {
		return nil, &aslFailure{"States.ResultPathMatchFailure", "input is not an object"}
	}
	keys := strings.Split(p[2:], ".")
	cur := root
	for _, k := range keys[:len(keys)-1] {
		nxt, ok := cur[k].(map[string]any)
		if !ok {
			nxt = map[string]any{}
			cur[k] = nxt
		}
		cur = nxt
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

// eval evaluates a Parameters-like template against input.
func (r *aslRun) eval(tpl, input any, ctxObj map[string]any) (any, *aslFailure) {
	switch t := tpl.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, v := range t {
			if name, ok := strings.CutSuffix(k, ".$"); ok {
				expr, _ := v.(string)
				val, err := aslExpr(expr, input, ctxObj)
				if err != nil {
					return nil, err
				}
				out[name] = val
				continue
			}
			val, err := r.eval(v, input, ctxObj)
			if err != nil {
				return nil, err
			}
			out[k] = val
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, v := range t {
			val, err := r.eval(v, input, ctxObj)
			if err != nil {
				return nil, err
			}
			out[i] = val
		}
		return out, nil
	}
	return tpl, nil
}

// aslExpr evaluates a path or an intrinsic function call.
func aslExpr(expr string, input any, ctxObj map[string]any) (any, *aslFailure) {
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(expr, "States.") {
		open := strings.IndexByte(expr, '(')
		if open < 0 || !strings.HasSuffix(expr, ")") {
			return nil, &aslFailure{"States.Runtime", "malformed intrinsic " + expr}
		}
		args, err := splitArgs(expr[open+1 : len(expr)-1])
		if err != nil {
			return nil, err
		}
		vals := make([]any, len(args))
		for i, a := range args {
			if strings.HasPrefix(a, "'") {
				vals[i] = strings.ReplaceAll(a[1:len(a)-1], `\'`, `'`)
				continue
			}
			if f, perr := strconv.ParseFloat(a, 64); perr == nil {
				vals[i] = f
				continue
			}
			if vals[i], err = aslExpr(a, input, ctxObj); err != nil {
				return nil, err
			}
		}
		return intrinsic(expr[:open], vals)
	}
	v, ok := aslGet(expr, input, ctxObj)
	if !ok {
		return nil, &aslFailure{"States.Runtime", fmt.Sprintf("the JSONPath %s could not be found in the input", expr)}
	}
	return v, nil
}

// splitArgs splits an intrinsic's arguments at top-level commas.
func splitArgs(s string) ([]string, *aslFailure) {
	var out []string
	depth, quoted, from := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[from:i]))
			from = i + 1
		}
	}
	if quoted || depth != 0 {
		return nil, &aslFailure{"States.Runtime", "malformed arguments " + s}
	}
	if strings.TrimSpace(s[from:]) != "" {
		out = append(out, strings.TrimSpace(s[from:]))
	}
	return out, nil
}

func intrinsic(name string, args []any) (any, *aslFailure) {
	bad := func(why string) (any, *aslFailure) {
		return nil, &aslFailure{"States.IntrinsicFailure", name + ": " + why}
	}
	switch name {
	case "States.Format":
		if len(args) == 0 {
			return bad("no template")
		}
		tpl, _ := args[0].(string)
		var b strings.Builder
		n := 1
		for {
			i := strings.Index(tpl, "{}")
			if i < 0 {
				b.WriteString(tpl)
				break
			}
			if n >= len(args) {
				return bad("more {} than arguments")
			}
			b.WriteString(tpl[:i])
			switch v := args[n].(type) {
			case string:
				b.WriteString(v)
			case float64:
				b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
			default:
				enc, _ := json.Marshal(v)
				b.Write(enc)
			}
			tpl, n = tpl[i+2:], n+1
		}
		if n != len(args) {
			return bad("more arguments than {}")
		}
		return b.String(), nil
	case "States.Hash":
		data, ok1 := args[0].(string)
		alg, ok2 := args[1].(string)
		if len(args) != 2 || !ok1 || !ok2 {
			return bad("want (string, algorithm)")
		}
		var h hash.Hash
		switch alg {
		case "MD5":
			h = md5.New()
		case "SHA-1":
			h = sha1.New()
		case "SHA-256":
			h = sha256.New()
		case "SHA-512":
			h = sha512.New()
		default:
			return bad("algorithm " + alg)
		}
		h.Write([]byte(data))
		return hex.EncodeToString(h.Sum(nil)), nil
	case "States.MathAdd":
		a, ok1 := args[0].(float64)
		b, ok2 := args[1].(float64)
		if len(args) != 2 || !ok1 || !ok2 {
			return bad("want two numbers")
		}
		return a + b, nil
	case "States.JsonToString":
		if len(args) != 1 {
			return bad("want one argument")
		}
		b, _ := json.Marshal(args[0])
		return string(b), nil
	}
	return bad("unsupported")
}

// aslGet reads a JSONPath ($, $.a.b, $$.Execution.Input, …).
func aslGet(path string, input any, ctxObj map[string]any) (any, bool) {
	var cur any
	switch {
	case path == "$":
		return input, true
	case strings.HasPrefix(path, "$$."):
		cur, path = ctxObj, path[3:]
	case strings.HasPrefix(path, "$."):
		cur, path = input, path[2:]
	default:
		return nil, false
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}
