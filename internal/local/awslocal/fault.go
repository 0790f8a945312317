package awslocal

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/smithy-go/middleware"
)

// Fault describes calls to fail.
type Fault struct {
	// Service is the smithy service ID: "DynamoDB", "SQS", "S3", "Lambda",
	// "SNS". Empty matches any service.
	Service string
	// Operation is the API name, e.g. "SendMessage". Empty matches any.
	Operation string
	// Match, when set, restricts the fault to calls whose input (the
	// operation's *Input struct) it accepts: one sweeper index partition,
	// one kind of UpdateItem, … .
	Match func(input any) bool
	// Resource restricts the fault to calls on one queue (URL or name),
	// table, bucket, function (name or ARN) or topic (ARN or name). A
	// TransactWriteItems, BatchWriteItem or BatchGetItem call matches if any
	// of its items targets the table. Empty matches any resource.
	Resource string
	// Times fails the next Times matching calls, then the fault retires.
	// 0 with Probability > 0 fails each matching call with that probability
	// forever; 0 with Probability 0 fails every matching call until removed.
	// With both set, each matching call fails with Probability until Times
	// calls have failed.
	Times       int
	Probability float64
	// Err is returned to the caller. Default: the service's own retryable
	// internal error (DynamoDB InternalServerError, SNS InternalError,
	// Lambda ServiceException, S3/SQS InternalError). Throttled and
	// ServiceUnavailable also adapt to the service they are injected into.
	Err error
}

// Faults injects errors into SDK calls through a middleware (APIOptions),
// so the code under test keeps its real clients.
//
// The failure is returned from the Initialize step, before the SDK's retry
// middleware (Finalize step) runs: one matching call is exactly one
// injection, the retryer never sees it and never retries it, so counts are
// deterministic and a Times: 1 fault is observed by the caller as one
// failed call. Code whose resilience depends on SDK retries should be
// tested with emulator-side failures instead.
//
// Faults is safe for concurrent use.
type Faults struct {
	id     string
	mu     sync.Mutex
	active []*activeFault
	counts map[string]int // "Service.Operation" -> injections
}

type activeFault struct {
	Fault
	failed int
}

var middlewareSeq atomic.Int64

// NewFaults returns an empty fault set.
func NewFaults() *Faults {
	return &Faults{id: middlewareID("awslocal.Faults"), counts: map[string]int{}}
}

func middlewareID(prefix string) string {
	// Unique per instance: two Faults (or Calls) on one client must not
	// collide in the middleware stack.
	return prefix + "#" + strconv.FormatInt(middlewareSeq.Add(1), 10)
}

// Add activates a fault; the returned func removes it (idempotent).
func (f *Faults) Add(ft Fault) (remove func()) {
	af := &activeFault{Fault: ft}
	f.mu.Lock()
	f.active = append(f.active, af)
	f.mu.Unlock()
	return func() { f.remove(af) }
}

func (f *Faults) remove(af *activeFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, a := range f.active {
		if a == af {
			f.active = append(f.active[:i:i], f.active[i+1:]...)
			return
		}
	}
}

// Clear removes every fault (counts are kept).
func (f *Faults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active = nil
}

// Injected counts the errors injected so far for an operation, given as
// "SendMessage" (any service) or "SQS.SendMessage"; "" counts all.
func (f *Faults) Injected(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for k, c := range f.counts {
		_, name, _ := strings.Cut(k, ".")
		if op == "" || op == k || op == name {
			n += c
		}
	}
	return n
}

// APIOption is the middleware to append to a client's APIOptions (or to
// aws.Config.APIOptions).
func (f *Faults) APIOption(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc(f.id,
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if err := f.inject(middleware.GetServiceID(ctx), middleware.GetOperationName(ctx), in.Parameters); err != nil {
				return middleware.InitializeOutput{}, middleware.Metadata{}, err
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// inject returns the error of the first active fault matching the call.
func (f *Faults) inject(service, op string, params any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var resources []string
	resolved := false
	for i, a := range f.active {
		if a.Service != "" && a.Service != service || a.Operation != "" && a.Operation != op {
			continue
		}
		if a.Resource != "" {
			if !resolved {
				resources, resolved = resourcesOf(params), true
			}
			if !matchesResource(resources, a.Resource) {
				continue
			}
		}
		if a.Match != nil && !a.Match(params) {
			continue
		}
		if a.Probability > 0 && rand.Float64() >= a.Probability {
			continue
		}
		a.failed++
		if a.Times > 0 && a.failed >= a.Times {
			f.active = append(f.active[:i:i], f.active[i+1:]...)
		}
		f.counts[service+"."+op]++
		return errorFor(service, a.Err)
	}
	return nil
}

func matchesResource(resources []string, want string) bool {
	for _, r := range resources {
		if r == want {
			return true
		}
	}
	return false
}

// resourcesOf lists the names a call's input targets, each in every form a
// Fault.Resource may give it (a queue by URL and by name, a function by name
// and by ARN, ...).
func resourcesOf(params any) []string {
	v := reflect.ValueOf(params)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	str := func(name string) string {
		fv := v.FieldByName(name)
		if fv.IsValid() && fv.Kind() == reflect.Pointer && !fv.IsNil() && fv.Elem().Kind() == reflect.String {
			return fv.Elem().String()
		}
		return ""
	}
	if s := str("QueueUrl"); s != "" {
		out = append(out, s, s[strings.LastIndexByte(s, '/')+1:])
	}
	if s := str("QueueName"); s != "" {
		out = append(out, s)
	}
	if s := str("TableName"); s != "" {
		out = append(out, s, s[strings.LastIndexByte(s, '/')+1:]) // a table ARN ends in table/<name>
	}
	if s := str("Bucket"); s != "" {
		out = append(out, s)
	}
	if s := str("FunctionName"); s != "" {
		name, _ := ParseFunctionName(s)
		out = append(out, s, name, FunctionARN(name))
	}
	for _, field := range []string{"TopicArn", "TargetArn"} {
		if s := str(field); s != "" {
			out = append(out, s, s[strings.LastIndexByte(s, ':')+1:])
		}
	}
	// TransactWriteItems / TransactGetItems: each item's Put, Update, Delete,
	// ConditionCheck or Get names its table.
	if items := v.FieldByName("TransactItems"); items.IsValid() && items.Kind() == reflect.Slice {
		for i := range items.Len() {
			item := items.Index(i)
			if item.Kind() != reflect.Struct {
				continue
			}
			for _, op := range []string{"Put", "Update", "Delete", "ConditionCheck", "Get"} {
				if fv := item.FieldByName(op); fv.IsValid() && fv.CanInterface() {
					out = append(out, resourcesOf(fv.Interface())...)
				}
			}
		}
	}
	// BatchWriteItem / BatchGetItem are keyed by table name.
	if items := v.FieldByName("RequestItems"); items.IsValid() && items.Kind() == reflect.Map && items.Type().Key().Kind() == reflect.String {
		for _, k := range items.MapKeys() {
			out = append(out, k.String())
		}
	}
	return out
}
