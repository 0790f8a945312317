package lambdalocal

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/uuid"

	"github.com/siteswarm/eventplatform/internal/aws/lambdainvoke"
	"github.com/siteswarm/eventplatform/internal/kit/afterward"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
)

// MaxInvokePayload is Lambda's synchronous request payload limit (6 MB).
const MaxInvokePayload = lambdainvoke.MaxRequestPayload

// DefaultFunctionTimeout is the timeout of a registered function unless
// FunctionTimeout says otherwise.
const DefaultFunctionTimeout = 30 * time.Second

// Functions serves the Lambda Invoke API
// (POST /2015-03-31/functions/{name}/invocations) for Go handlers
// registered in-process, so producers use the real SDK lambda client
// locally too. Handlers run through lambda.NewHandler, the same JSON
// (de)serialisation the Lambda Go runtime applies. It is safe for concurrent
// use; the zero value is not, use NewFunctions.
//
// Not emulated: aliases and versions (any qualifier runs the one registered
// handler, reported as $LATEST), Lambda's automatic retries of failed Event
// invocations, concurrency limits, X-Amz-Log-Type: Tail logs.
type Functions struct {
	mu      sync.RWMutex
	fns     map[string]*function
	onEvent func(name string, err error)
	events  sync.WaitGroup
	// after tracks the work invocations do after their answers
	// (afterward.Go), as Lambda holds an environment for it.
	after sync.WaitGroup
}

type function struct {
	name    string
	handler lambda.Handler
	// raw is what Register was given; see invocationHandler.
	raw     any
	timeout time.Duration
	after   *sync.WaitGroup
}

// FunctionOption configures a registered function.
type FunctionOption func(*function)

// FunctionTimeout sets the function's timeout (default 30s): the handler's
// context deadline, after which the invocation fails with Lambda's
// Sandbox.Timedout error.
func FunctionTimeout(d time.Duration) FunctionOption {
	return func(f *function) { f.timeout = d }
}

// NewFunctions returns an empty registry.
func NewFunctions() *Functions {
	return &Functions{fns: map[string]*function{}}
}

// Register adds (or replaces) a function. handler is anything
// lambda.NewHandler accepts: a func with one of the Lambda handler
// signatures, or a lambda.Handler. A value that cannot be a handler at all
// panics here rather than at the first invocation.
func (f *Functions) Register(name string, handler any, opts ...FunctionOption) {
	if _, ok := handler.(lambda.Handler); !ok {
		if handler == nil || reflect.TypeOf(handler).Kind() != reflect.Func {
			panic(fmt.Sprintf("awslocal: Register(%q): %T is not a Lambda handler", name, handler))
		}
	}
	fn := &function{name: name, handler: lambda.NewHandler(handler), raw: handler, timeout: DefaultFunctionTimeout, after: &f.after}
	for _, o := range opts {
		o(fn)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fns[name] = fn
}

// Unregister removes a function; later invocations get
// ResourceNotFoundException.
func (f *Functions) Unregister(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.fns, name)
}

// OnEventError sets a callback for failed Event (asynchronous)
// invocations, whose errors have no caller to return to.
func (f *Functions) OnEventError(fn func(name string, err error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onEvent = fn
}

// Wait blocks until every Event invocation started so far has finished,
// and every invocation's work after its answer.
func (f *Functions) Wait() {
	f.events.Wait()
	f.after.Wait()
}

func (f *Functions) lookup(name string) (*function, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn, ok := f.fns[name]
	return fn, ok
}

// lambdaError writes a Lambda service error the SDK decodes into its
// modelled type (restjson: the code comes from X-Amzn-ErrorType).
func lambdaError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg})
}

func (f *Functions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const prefix, suffix = "/2015-03-31/functions/", "/invocations"
	path := r.URL.EscapedPath()
	if r.Method != http.MethodPost || !strings.HasPrefix(path, prefix) || !strings.HasSuffix(path, suffix) {
		lambdaError(w, http.StatusNotFound, "UnknownOperationException",
			"the local Lambda server only serves POST /2015-03-31/functions/{name}/invocations")
		return
	}
	raw, err := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(path, prefix), suffix))
	if err != nil {
		lambdaError(w, http.StatusBadRequest, "InvalidParameterValueException", err.Error())
		return
	}
	name, qualifier := awslocal.ParseFunctionName(raw)
	if q := r.URL.Query().Get("Qualifier"); q != "" {
		qualifier = q
	}
	arn := awslocal.FunctionARN(name)
	if qualifier != "" {
		arn += ":" + qualifier
	}
	fn, ok := f.lookup(name)
	if !ok {
		lambdaError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+arn)
		return
	}

	payload, err := io.ReadAll(io.LimitReader(r.Body, MaxInvokePayload+1))
	if err != nil {
		lambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", err.Error())
		return
	}
	if len(payload) > MaxInvokePayload {
		lambdaError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException",
			fmt.Sprintf("Request must be smaller than %d bytes for the InvokeFunction operation", MaxInvokePayload))
		return
	}
	if len(bytes.TrimSpace(payload)) == 0 {
		payload = []byte("{}")
	}
	if !json.Valid(payload) {
		lambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", "Could not parse request body into json")
		return
	}

	lc := &lambdacontext.LambdaContext{AwsRequestID: uuid.NewString(), InvokedFunctionArn: arn}
	if cc := r.Header.Get("X-Amz-Client-Context"); cc != "" {
		if b, err := base64.StdEncoding.DecodeString(cc); err == nil {
			_ = json.Unmarshal(b, &lc.ClientContext)
		}
	}
	w.Header().Set("X-Amzn-RequestId", lc.AwsRequestID)
	traceHeader := r.Header.Get("X-Amzn-Trace-Id")

	switch typ := r.Header.Get("X-Amz-Invocation-Type"); typ {
	case "", "RequestResponse":
		out, ierr := fn.invoke(lc, payload, traceHeader)
		w.Header().Set("X-Amz-Executed-Version", "$LATEST")
		w.Header().Set("Content-Type", "application/json")
		if ierr != nil {
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			out, _ = json.Marshal(ierr)
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
	case "Event":
		f.events.Add(1)
		go func() {
			defer f.events.Done()
			if _, ierr := fn.invoke(lc, payload, traceHeader); ierr != nil {
				f.mu.RLock()
				cb := f.onEvent
				f.mu.RUnlock()
				if cb != nil {
					cb(name, fmt.Errorf("%s: %s", ierr.Type, ierr.Message))
				}
			}
		}()
		w.WriteHeader(http.StatusAccepted)
	case "DryRun":
		w.WriteHeader(http.StatusNoContent)
	default:
		lambdaError(w, http.StatusBadRequest, "InvalidParameterValueException",
			fmt.Sprintf("Invalid InvocationType %q", typ))
	}
}

// invoke runs the handler with a Lambda context and the function's
// deadline. The context is detached from the HTTP request: a Lambda
// invocation keeps running when its caller goes away. A handler that
// overruns its deadline is abandoned (it keeps its cancelled context), as
// Lambda freezes it; a panic is reported like the Go runtime reports one.
//
// A caller's X-Amzn-Trace-Id is handed to the handler under the context key
// the Lambda Go runtime uses ("x-amzn-trace-id"), so tracing and log
// correlation see what they see in Lambda.
func (fn *function) invoke(lc *lambdacontext.LambdaContext, payload []byte, traceHeader string) ([]byte, *messages.InvokeResponse_Error) {
	base := lambdacontext.NewContext(context.Background(), lc)
	if traceHeader != "" {
		base = context.WithValue(base, "x-amzn-trace-id", traceHeader) //nolint:staticcheck // the runtime's own key
	}
	// The work the invocation hands to afterward.Go runs after its answer,
	// as in Lambda with the afterward extension: the caller gets the
	// answer at once, Wait waits for the work.
	tasks := afterward.New()
	base = afterward.With(base, tasks)
	fn.after.Add(1)
	defer func() {
		go func() {
			tasks.Wait()
			fn.after.Done()
		}()
	}()
	ctx, cancel := context.WithTimeout(base, fn.timeout)
	defer cancel()

	type result struct {
		out []byte
		err *messages.InvokeResponse_Error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: &messages.InvokeResponse_Error{Message: fmt.Sprint(p), Type: typeName(p)}}
			}
		}()
		out, err := fn.invocationHandler().Invoke(ctx, payload)
		if err != nil {
			done <- result{err: invokeError(err)}
			return
		}
		done <- result{out: bytes.Clone(out)}
	}()
	select {
	case res := <-done:
		return res.out, res.err
	case <-ctx.Done():
		return nil, &messages.InvokeResponse_Error{
			Type:    "Sandbox.Timedout",
			Message: fmt.Sprintf("%s Task timed out after %.2f seconds", time.Now().UTC().Format(time.RFC3339), fn.timeout.Seconds()),
		}
	}
}

// invokeError is the error body the Go runtime reports: the error's type
// name (pointer stripped) and message, or an InvokeResponse_Error as is.
func invokeError(err error) *messages.InvokeResponse_Error {
	var ive messages.InvokeResponse_Error
	if errors.As(err, &ive) {
		return &ive
	}
	var ivp *messages.InvokeResponse_Error
	if errors.As(err, &ivp) && ivp != nil {
		return ivp
	}
	return &messages.InvokeResponse_Error{Message: err.Error(), Type: typeName(err)}
}

func typeName(v any) string {
	t := reflect.TypeOf(v)
	if t == nil {
		return "error"
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
