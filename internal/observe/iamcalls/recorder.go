package iamcalls

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/aws/smithy-go/middleware"

	"github.com/siteswarm/eventplatform/internal/observe/costmodel"
)

// EnvRecord names the directory the local stack writes its recordings to
// (one file per stack, RecordingExt); unset, nothing is recorded.
// `make test` sets it to .cache/iam-calls.
const EnvRecord = "EVP_IAM_RECORD"

// RecordingExt ends a recording's file name.
const RecordingExt = ".iamcalls.json"

// How a call was made on a function's behalf, besides its handler's code
// (""): Lambda's own calls with the function's role.
const (
	// ViaEventSource: the function's SQS event source mapping (receive,
	// delete), made by Lambda with the function's execution role.
	ViaEventSource = "event source mapping"
	// ViaColdStart: the function's initialization, before its first
	// invocation.
	ViaColdStart = "cold start"
)

type viaKey struct{}

// Via marks ctx's calls as made how (ViaEventSource, ViaColdStart) for
// the function it is attributed to.
func Via(ctx context.Context, how string) context.Context {
	return context.WithValue(ctx, viaKey{}, how)
}

func viaOf(ctx context.Context) string {
	v, _ := ctx.Value(viaKey{}).(string)
	return v
}

// Call is one distinct authorization a function's calls needed, with how
// often the runs asked for it.
type Call struct {
	// Function is the caller as the stage names it, without the stage's
	// prefix ("ingest", "consumer-billing-events"; a state machine
	// "states:replay").
	Function string `json:"function"`
	Via      string `json:"via,omitempty"`
	// Operation is the SDK call ("DynamoDB.TransactWriteItems") that
	// needed it.
	Operation string `json:"operation"`
	Request
	Count int `json:"count"`
}

// Recording is what one local stack recorded.
type Recording struct {
	// Source names the run (the test binary, `evp dev`).
	Source string `json:"source"`
	Calls  []Call `json:"calls"`
	// Unmapped are attributed calls Expand has no rule for, by function
	// and operation: the check fails on them.
	Unmapped map[string]int `json:"unmapped,omitempty"`
	// Sampled counts the object requests left out once a function's
	// action on one top-level prefix of a bucket had MaxObjectKeys
	// distinct keys.
	Sampled int `json:"sampled,omitempty"`
}

// MaxObjectKeys bounds the distinct object keys kept per function,
// action and top-level prefix of a bucket: the stage's object grants are
// by prefix (payloads/*, jobs/*), so more keys under one prefix decide
// nothing more, and a run writes thousands.
const MaxObjectKeys = 20

// Recorder records the calls of the clients it is attached to
// (APIOption), attributed through costmodel.FunctionOf. Calls no function
// is attributed (the harness's own, provisioning) are not recorded. Safe
// for concurrent use.
type Recorder struct {
	// Names maps local resource names onto the stage's.
	Names Namer
	// Source names the run in the recording.
	Source string

	mu       sync.Mutex
	calls    map[callKey]*Call
	prefixes map[string]int // function|action|bucket/prefix → distinct keys kept
	unmapped map[string]int
	sampled  int
}

type callKey struct {
	function, via, operation, action, resource, context string
}

// NewRecorder returns an empty recorder naming resources with names.
func NewRecorder(names Namer, source string) *Recorder {
	return &Recorder{Names: names, Source: source, calls: map[callKey]*Call{}, prefixes: map[string]int{}, unmapped: map[string]int{}}
}

// APIOption is the middleware to add to a client's APIOptions. It
// records at the Initialize step: the call as the code made it, once,
// whatever the SDK's retries.
func (r *Recorder) APIOption(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("iamcalls.Recorder",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if fn := costmodel.FunctionOf(ctx); fn != "" {
				r.record(fn, viaOf(ctx), middleware.GetServiceID(ctx)+"."+middleware.GetOperationName(ctx), in.Parameters)
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// caller is a function's name on the stage without the stage's prefix
// ("consumer-billing-events"), as the Namer maps it.
func (r *Recorder) caller(function string) string {
	if r.Names == nil {
		return function
	}
	name, _ := strings.CutPrefix(r.Names.StageName(Function, function), StageVar+"-")
	return name
}

func (r *Recorder) record(function, via, op string, params any) {
	function = r.caller(function)
	reqs, ok := Expand(params, r.Names)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !ok {
		r.unmapped[function+" "+op]++
		return
	}
	for _, q := range reqs {
		r.add(Call{Function: function, Via: via, Operation: op, Request: q})
	}
}

// StateMachinePrincipal names a state machine as a caller in a recording
// ("states:replay": its name without the stage's prefix).
func StateMachinePrincipal(name string) string { return "states:" + name }

// Record adds one authorization made outside an SDK client: a state
// machine's task, which the local Step Functions runner runs in-process
// (lambda:InvokeFunction on a function's ARN, states:StartExecution on a
// state machine's), with the resource's local ARN.
func (r *Recorder) Record(principal, action, localARN string) {
	n := r.Names
	if n == nil {
		n = identity{}
	}
	a := arns{n}
	resource := localARN
	switch {
	case strings.Contains(localARN, ":function:"):
		resource = a.function(localARN, "")
	case strings.Contains(localARN, ":stateMachine:"):
		resource = a.stateMachine(localARN)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.add(Call{Function: principal, Operation: "States.Task", Request: req(action, resource)})
}

func (r *Recorder) add(c Call) {
	k := callKey{c.Function, c.Via, c.Operation, c.Action, c.Resource, contextKey(c.Context)}
	if have, ok := r.calls[k]; ok {
		have.Count++
		return
	}
	if p, ok := objectPrefix(c.Resource); ok {
		pk := c.Function + "|" + c.Action + "|" + p
		if r.prefixes[pk] >= MaxObjectKeys {
			r.sampled++
			return
		}
		r.prefixes[pk]++
	}
	c.Count = 1
	r.calls[k] = &c
}

func contextKey(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%s;", k, m[k])
	}
	return b.String()
}

// objectPrefix is an S3 object ARN's bucket and top-level prefix
// ("arn:…:s3:::b/payloads/t/e" → "b/payloads"), false for another ARN.
func objectPrefix(arn string) (string, bool) {
	rest, ok := strings.CutPrefix(arn, "arn:"+PartitionVar+":s3:::")
	if !ok {
		return "", false
	}
	bucket, key, ok := strings.Cut(rest, "/")
	if !ok {
		return "", false
	}
	top, _, _ := strings.Cut(key, "/")
	return bucket + "/" + top, true
}

// Recording is what was recorded so far, calls sorted.
func (r *Recorder) Recording() Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := Recording{Source: r.Source, Unmapped: maps.Clone(r.unmapped), Sampled: r.sampled}
	for _, c := range r.calls {
		out.Calls = append(out.Calls, *c)
	}
	slices.SortFunc(out.Calls, func(a, b Call) int {
		return strings.Compare(a.Function+a.Via+a.Operation+a.Action+a.Resource+contextKey(a.Context),
			b.Function+b.Via+b.Operation+b.Action+b.Resource+contextKey(b.Context))
	})
	return out
}

// WriteDir writes the recording to a new file in dir (created if
// missing); an empty recording writes nothing.
func (r *Recorder) WriteDir(dir string) error {
	rec := r.Recording()
	if len(rec.Calls) == 0 && len(rec.Unmapped) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "*"+RecordingExt)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	if err := enc.Encode(rec); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// ReadDir reads every recording in dir.
func ReadDir(dir string) ([]Recording, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*"+RecordingExt))
	if err != nil {
		return nil, err
	}
	var out []Recording
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var rec Recording
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, rec)
	}
	return out, nil
}
