package costmodel

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/siteswarm/eventplatform/internal/kit/afterward"
)

// LabelInvocation is the CPU-profile label (runtime/pprof) that names the
// invocation a goroutine works for; LabelMeter marks the meter's own work
// inside it (its reads of items before and after a write), which is not
// the function's.
const (
	LabelInvocation = "costmodel.invocation"
	LabelMeter      = "costmodel.meter"
)

// FIFOSuffix marks a call on a FIFO queue in an invocation's trace
// ("SQS.SendMessage (FIFO)"): the latency model prices it apart, the
// duration model as any SQS call.
const FIFOSuffix = " (FIFO)"

// clientContextKey links a synchronous Lambda Invoke to the invocation it
// starts: the meter puts the call's token in the request's client context,
// and the callee's Begin reads it from its lambdacontext.
const clientContextKey = "costmodel.call"

// invocation is one function invocation as the meter saw it: its calls,
// and from which goroutine each was made, so its critical path can be
// told from the calls its goroutines made side by side.
type invocation struct {
	id, role string
	memoryMB int
	root     int64
	// wall is the handler's measured duration (emulator time, for the
	// record only).
	wall time.Duration

	mu sync.Mutex
	// rootDone counts the root goroutine's finished calls; a goroutine
	// the handler started is placed at the count when it made its first
	// call (the root waits for the goroutines it fans out to, so those
	// started at one count ran side by side).
	rootDone int
	pos      map[int64]int
	calls    []tracedCall
}

type tracedCall struct {
	gid   int64
	pos   int // root calls done before it (children: at their first call)
	op    string
	token string // Lambda.Invoke: links the invocation it started
	// after: made by work the invocation does after its answer
	// (afterward.Go): billed, but nobody waits for it.
	after bool
}

type invocationKey struct{}

func invocationOf(ctx context.Context) *invocation {
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	return inv
}

// goid is the calling goroutine's id (runtime.Stack's header).
func goid() int64 {
	var buf [64]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseInt(string(b), 10, 64)
	return id
}

// Begin records an invocation of function starting on the calling
// goroutine (the one that runs its handler), with the invocation's context
// (its lambdacontext names the Lambda Invoke call that started it, if the
// meter saw that call). The handler must run with the returned context:
// the meter attributes calls made with it, and the CPU profile labels
// (LabelInvocation) of this goroutine and every goroutine it starts name
// the invocation. end records its measured duration.
func (m *Meter) Begin(ctx context.Context, function string) (context.Context, func(wall time.Duration)) {
	role := RoleOf(function)
	m.mu.Lock()
	m.nextInv++
	inv := &invocation{id: strconv.Itoa(m.nextInv), role: role, memoryMB: MemoryMB[role], root: goid(), pos: map[int64]int{}}
	m.invs = append(m.invs, inv)
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		if token := lc.ClientContext.Custom[clientContextKey]; token != "" {
			m.callees[token] = inv
		}
	}
	m.mu.Unlock()
	labelled := pprof.WithLabels(context.WithValue(Attribute(ctx, function), invocationKey{}, inv), pprof.Labels(LabelInvocation, inv.id))
	pprof.SetGoroutineLabels(labelled)
	return labelled, func(wall time.Duration) {
		pprof.SetGoroutineLabels(ctx)
		m.mu.Lock()
		inv.wall = wall
		m.mu.Unlock()
		m.add(Units{LambdaInvocations: 1})
	}
}

// Invocation records one Lambda invocation of d at memoryMB whose calls
// the meter did not see (GB-seconds from d as measured).
func (m *Meter) Invocation(memoryMB int, d time.Duration) {
	m.add(Units{LambdaInvocations: 1, LambdaGBSeconds: LambdaGBSeconds(memoryMB, float64(d)/float64(time.Millisecond))})
}

// trace records a call of op made by ctx's invocation (nil: by none) and
// returns what to call when it returns. A Lambda Invoke gets a token in
// its client context that links the invocation it starts.
func (m *Meter) trace(ctx context.Context, op string, params any) (any, func()) {
	inv := invocationOf(ctx)
	if inv == nil {
		return params, func() {}
	}
	gid := goid()
	inv.mu.Lock()
	c := tracedCall{gid: gid, op: op, after: afterward.After(ctx)}
	if strings.HasSuffix(queueURL(params), ".fifo") {
		c.op += FIFOSuffix
	}
	if gid == inv.root {
		c.pos = inv.rootDone
	} else {
		p, ok := inv.pos[gid]
		if !ok {
			p = inv.rootDone
			inv.pos[gid] = p
		}
		c.pos = p
	}
	if in, ok := params.(*lambda.InvokeInput); ok && in.ClientContext == nil {
		c.token = fmt.Sprintf("%s/%d", inv.id, len(inv.calls))
		b, _ := json.Marshal(map[string]any{"custom": map[string]string{clientContextKey: c.token}})
		cp := *in
		cc := base64.StdEncoding.EncodeToString(b)
		cp.ClientContext = &cc
		params = &cp
	}
	inv.calls = append(inv.calls, c)
	inv.mu.Unlock()
	return params, func() {
		if gid == inv.root {
			inv.mu.Lock()
			inv.rootDone++
			inv.mu.Unlock()
		}
	}
}

// metering runs the meter's own work inside a call (reading the item
// before and after a write) under LabelMeter, so a CPU profile does not
// count it as the function's.
func metering(ctx context.Context, fn func()) {
	if invocationOf(ctx) == nil {
		fn()
		return
	}
	pprof.Do(ctx, pprof.Labels(LabelMeter, "peek"), func(context.Context) { fn() })
}

// RoleCompute is one function role's share of a path's compute, summed
// over its invocations.
type RoleCompute struct {
	Role        string `json:"role"`
	MemoryMB    int    `json:"memoryMB"`
	Invocations int    `json:"invocations"`
	// Calls the role's invocations made, and the model's parts of their
	// billed duration: waiting on calls on the critical path (a Lambda
	// Invoke includes its callee's billed duration), and CPU (the role's
	// CPU per invocation on one core as priced, stretched to its memory's
	// CPU share).
	Calls  int     `json:"calls"`
	WaitMs float64 `json:"waitMs"`
	// AnswerMs is the part of BilledMs before the invocation's answer
	// (what its caller waits for); the rest is work after it.
	AnswerMs float64 `json:"answerMs"`
	CPUMs    float64 `json:"cpuMs"`
	BilledMs float64 `json:"billedMs"`
	// PricedCPUMs is the CPU per invocation on one core the model was
	// given, MeasuredCPUMs what this run's profile measured (MeanCPU).
	PricedCPUMs   float64 `json:"pricedCpuMs"`
	MeasuredCPUMs float64 `json:"measuredCpuMs,omitempty"`
	// WallMs is the measured duration on the emulators, for comparison.
	WallMs    float64 `json:"wallMs"`
	GBSeconds float64 `json:"gbSeconds"`

	ids []string // the invocations'
}

// Compute is the meter's invocations since Reset priced by model: each
// invocation's billed duration is its critical-path wait plus its role's
// CPU per invocation on one core (cpu) stretched to its memory's CPU
// share, rounded up to the millisecond, at its role's memory. Roles are
// sorted by name.
func (m *Meter) Compute(model DurationModel, cpu map[string]time.Duration) []RoleCompute {
	m.mu.Lock()
	invs := slices.Clone(m.invs)
	callees := make(map[string]*invocation, len(m.callees))
	for k, v := range m.callees {
		callees[k] = v
	}
	m.mu.Unlock()
	byRole := map[string]*RoleCompute{}
	memo := map[*invocation]modelled{}
	for _, inv := range invs {
		d := model.invocation(inv, callees, cpu, memo)
		rc := byRole[inv.role]
		if rc == nil {
			rc = &RoleCompute{Role: inv.role, MemoryMB: inv.memoryMB, PricedCPUMs: float64(cpu[inv.role]) / float64(time.Millisecond)}
			byRole[inv.role] = rc
		}
		rc.ids = append(rc.ids, inv.id)
		inv.mu.Lock()
		rc.Calls += len(inv.calls)
		rc.WallMs += float64(inv.wall) / float64(time.Millisecond)
		inv.mu.Unlock()
		rc.Invocations++
		rc.WaitMs += float64(d.wait) / float64(time.Millisecond)
		rc.AnswerMs += float64(d.answer) / float64(time.Millisecond)
		rc.CPUMs += float64(d.cpu) / float64(time.Millisecond)
		rc.BilledMs += float64(d.billed) / float64(time.Millisecond)
		rc.GBSeconds += LambdaGBSeconds(inv.memoryMB, float64(d.billed)/float64(time.Millisecond))
	}
	out := make([]RoleCompute, 0, len(byRole))
	for _, rc := range byRole {
		out = append(out, *rc)
	}
	slices.SortFunc(out, func(a, b RoleCompute) int {
		if a.Role < b.Role {
			return -1
		}
		if a.Role > b.Role {
			return 1
		}
		return 0
	})
	return out
}

// modelled is one invocation as the model prices it: the calls waited on
// (before and after the answer), CPU, the answer (when the caller has its
// result) and the billed duration (when the work after it is done too).
type modelled struct{ wait, cpu, answer, billed time.Duration }

// invocation models one invocation: the root goroutine's calls in turn,
// and between two of them the goroutines it fanned out to, side by side
// (the longest counts), then its CPU: that is its answer. Work it does
// after the answer (afterward.Go) is billed on top: its goroutines side by
// side, from the answer on (an upper bound: such work starts before the
// answer, as soon as the handler hands it over). A synchronous Lambda
// Invoke waits for its callee's answer, not for its billed duration.
func (model DurationModel) invocation(inv *invocation, callees map[string]*invocation, cpuOf map[string]time.Duration, memo map[*invocation]modelled) modelled {
	if d, ok := memo[inv]; ok {
		return d
	}
	memo[inv] = modelled{} // a cycle cannot happen; guard anyway
	inv.mu.Lock()
	calls := slices.Clone(inv.calls)
	root := inv.root
	inv.mu.Unlock()
	latency := func(c tracedCall) time.Duration {
		d := model.Latency(c.op)
		if c.token != "" {
			d = model.InvokeOverhead
			if callee, ok := callees[c.token]; ok {
				d += model.invocation(callee, callees, cpuOf, memo).answer
			}
		}
		return d
	}
	var wait, after time.Duration
	lanes := map[int]map[int64]time.Duration{} // position -> goroutine -> its calls' time
	afterLanes := map[int64]time.Duration{}
	for _, c := range calls {
		switch {
		case c.after:
			afterLanes[c.gid] += latency(c)
		case c.gid == root:
			wait += latency(c)
		default:
			if lanes[c.pos] == nil {
				lanes[c.pos] = map[int64]time.Duration{}
			}
			lanes[c.pos][c.gid] += latency(c)
		}
	}
	for _, gs := range lanes {
		longest := time.Duration(0)
		for _, d := range gs {
			longest = max(longest, d)
		}
		wait += longest
	}
	for _, d := range afterLanes {
		after = max(after, d)
	}
	cpu := model.CPUWall(inv.memoryMB, cpuOf[inv.role])
	answer := wait + cpu
	// Lambda bills at least a millisecond.
	d := modelled{wait: wait + after, cpu: cpu, answer: answer, billed: max(Billed(answer+after), time.Millisecond)}
	memo[inv] = d
	return d
}

// MeanCPU is the mean CPU time of rc's invocations in a CPU profile
// (ProfileCPU).
func (rc RoleCompute) MeanCPU(byInvocation map[string]time.Duration) time.Duration {
	if len(rc.ids) == 0 {
		return 0
	}
	var total time.Duration
	for _, id := range rc.ids {
		total += byInvocation[id]
	}
	return total / time.Duration(len(rc.ids))
}
