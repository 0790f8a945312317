package costmodel

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Hop is one step of a request as the latency model assumes it: its
// median and 99th percentile round trip, and where the figures come from.
type Hop struct {
	P50    time.Duration `json:"p50"`
	P99    time.Duration `json:"p99"`
	Source string        `json:"source"`
}

// LatencyModel is what a caller waits for, hop by hop: the calls on an
// invocation's critical path before its answer (as the meter recorded
// them on a run: the same calls, goroutines and callees as the cost
// model's DurationModel), each drawn from its hop's distribution, plus
// the invocation's CPU stretched to its memory's CPU share (as billed),
// plus, in front of a webhook, API Gateway. Each hop is log-normal with
// its stated median and 99th percentile (latencies are skewed: a sum of
// medians understates the median of a sum), and independent of the
// others; the answer's percentiles come from a fixed number of draws with
// a fixed seed, so a run of the same calls gives the same figures.
type LatencyModel struct {
	// Call is a call's round trip by "Service.Operation", as a function in
	// the same region sees it (warm connection; the SDK's own work is in
	// the CPU); Service by service id; Default otherwise.
	Call    map[string]Hop
	Service map[string]Hop
	Default Hop
	// Invoke is what a synchronous Lambda Invoke adds to its callee's
	// answer: routing to a warm execution environment, the payload both
	// ways.
	Invoke Hop
	// Gateway is API Gateway (HTTP API) in front of a function: the
	// request in, the integration's invoke of a warm function, the
	// response out, the function's own time excluded.
	Gateway Hop
	// FullCPUMemoryMB is DurationModel's: CPU is stretched the same way.
	FullCPUMemoryMB int
}

// InRegionLatency is the model docs/cost.md publishes. Its hops, with
// their sources (each a public measurement or AWS statement; where the
// only measurement found includes more than the hop, it stands as an
// upper bound and says so; the figures to replace first with a stage's
// own measurements):
//
//   - DynamoDB single-item writes (PutItem, UpdateItem, DeleteItem):
//     7.6 ms p50, 16.2 ms p99 — PutItem from a Lambda function in the
//     table's region, 400 calls (Alex DeBrie, "DynamoDB Transactions
//     Performance Testing", github.com/alexdebrie/dynamodb-performance-
//     testing). Reads (GetItem): AWS's "single-digit millisecond" with the
//     writes' tail: 5 and 16.2.
//   - TransactWriteItems: 25.3 ms p50, 92.5 ms p99 — the same
//     measurements, 5 items (ingest's has 2 or 3: an upper bound).
//   - BatchWriteItem, BatchGetItem, BatchExecuteStatement, Query: 8.1
//     and 25.5 — BatchWriteItem of 5 items, same source.
//   - SQS on a standard queue: 10 ms p50, 105 ms p99 — "low latency
//     (<10 ms on publish and receive)" (the usual figure of AWS's
//     certification material) and the 99th percentile of the whole trip
//     from a producer Lambda's send to its consumer Lambda through the
//     event source mapping (Luc van Donkersgoed, "Serverless Messaging:
//     Latency Compared", bitesizedserverless.com, eu-west-1, 2022), an
//     upper bound of the send's.
//   - SQS on a FIFO queue: 22 ms p50, 200 ms p99 — the standard queue's
//     10 plus what the same measurements add for a FIFO queue at the
//     median (28.1 − 16.2 ms), and SQS's documented "tens or low hundreds
//     of milliseconds" for a request (the measured trip's FIFO p99, 645
//     ms, is the event source mapping's polling, not the send).
//   - S3 (GetObject, PutObject): 100 and 200 — AWS's S3 performance
//     guidelines ("100–200 milliseconds" first-byte latency for small
//     objects).
//   - Lambda Invoke (synchronous, warm): 10 ms p50, 40 ms p99 added to
//     the callee's answer — routing, the payload both ways (Lambda's
//     documented request timeline: placement and handing over the event;
//     no public median found: an assumption, the figure to replace
//     first with a stage's measurement).
//   - API Gateway HTTP API: 10 ms p50, 30 ms p99 — "API Gateway itself
//     typically adds 10–30 milliseconds of overhead for REST APIs
//     (somewhat less for HTTP APIs)" (smplogs, API Gateway latency
//     patterns): the REST range as an upper bound.
//   - anything else (SNS, Secrets Manager, SSM, Step Functions): 20 and
//     100, an assumption.
var InRegionLatency = LatencyModel{
	Call: map[string]Hop{
		"DynamoDB.GetItem":                  {5 * time.Millisecond, ms(16.2), srcDeBrieReads},
		"DynamoDB.PutItem":                  {ms(7.6), ms(16.2), srcDeBrie},
		"DynamoDB.UpdateItem":               {ms(7.6), ms(16.2), srcDeBrie},
		"DynamoDB.DeleteItem":               {ms(7.6), ms(16.2), srcDeBrie},
		"DynamoDB.TransactWriteItems":       {ms(25.3), ms(92.5), srcDeBrieTx},
		"DynamoDB.TransactGetItems":         {ms(25.3), ms(92.5), srcDeBrieTx},
		"DynamoDB.Query":                    {ms(8.1), ms(25.5), srcDeBrieBatch},
		"DynamoDB.BatchGetItem":             {ms(8.1), ms(25.5), srcDeBrieBatch},
		"DynamoDB.BatchWriteItem":           {ms(8.1), ms(25.5), srcDeBrieBatch},
		"DynamoDB.BatchExecuteStatement":    {ms(8.1), ms(25.5), srcDeBrieBatch},
		"SQS.SendMessage" + FIFOSuffix:      {22 * time.Millisecond, 200 * time.Millisecond, srcSQSFIFO},
		"SQS.SendMessageBatch" + FIFOSuffix: {22 * time.Millisecond, 200 * time.Millisecond, srcSQSFIFO},
	},
	Service: map[string]Hop{
		"DynamoDB": {ms(7.6), ms(16.2), srcDeBrie},
		"SQS":      {10 * time.Millisecond, 105 * time.Millisecond, srcSQS},
		"S3":       {100 * time.Millisecond, 200 * time.Millisecond, "AWS S3 performance guidelines: 100–200 ms first byte for small objects"},
	},
	Default:         Hop{20 * time.Millisecond, 100 * time.Millisecond, "assumption (SNS, Secrets Manager, SSM, Step Functions)"},
	Invoke:          Hop{10 * time.Millisecond, 40 * time.Millisecond, "assumption: Lambda's request timeline (placement, the event handed over), no public median found"},
	Gateway:         Hop{10 * time.Millisecond, 30 * time.Millisecond, "smplogs, API Gateway latency patterns: 10–30 ms for REST APIs, less for HTTP APIs (upper bound)"},
	FullCPUMemoryMB: InRegion.FullCPUMemoryMB,
}

const (
	srcDeBrie      = "DeBrie, DynamoDB performance testing: PutItem from Lambda, same region"
	srcDeBrieReads = "AWS: single-digit ms; tail as DeBrie's PutItem"
	srcDeBrieTx    = "DeBrie, DynamoDB performance testing: TransactWriteItems of 5 items (upper bound for 2–3)"
	srcDeBrieBatch = "DeBrie, DynamoDB performance testing: BatchWriteItem of 5 items"
	srcSQS         = "<10 ms to publish (AWS certification material); p99: van Donkersgoed, Serverless Messaging: Latency Compared (2022), producer → consumer (upper bound)"
	srcSQSFIFO     = "the standard queue's 10 + the FIFO queue's extra median in van Donkersgoed (2022), 11.9; p99: SQS docs, \"tens or low hundreds of milliseconds\""
)

func ms(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

// Hop is the hop of op ("Service.Operation").
func (m LatencyModel) Hop(op string) Hop {
	if h, ok := m.Call[op]; ok {
		return h
	}
	for i := range op {
		if op[i] == '.' {
			if h, ok := m.Service[op[:i]]; ok {
				return h
			}
			break
		}
	}
	return m.Default
}

// Answer is the distribution of a request's answer, as LatencyModel
// draws it: its median and 99th percentile, and the hops on its critical
// path (each "Service.Operation" the answer waited for, per request).
type Answer struct {
	P50      time.Duration      `json:"p50"`
	P99      time.Duration      `json:"p99"`
	Requests int                `json:"requests"`
	Path     map[string]float64 `json:"path"`
}

// latencyDraws is how many times each request's answer is drawn.
const latencyDraws = 20000

// AnswerLatency is the answer of the meter's invocations of role since
// Reset (each one request), behind API Gateway when gateway is set, drawn
// from model with cpu (each role's CPU per invocation on one core, as the
// compute is priced): the p50 and p99 over every draw of every request.
func (m *Meter) AnswerLatency(model LatencyModel, cpu map[string]time.Duration, role string, gateway bool) Answer {
	m.mu.Lock()
	invs := slices.Clone(m.invs)
	callees := make(map[string]*invocation, len(m.callees))
	for k, v := range m.callees {
		callees[k] = v
	}
	m.mu.Unlock()
	rng := rand.New(rand.NewPCG(20261205, 37))
	var all []time.Duration
	out := Answer{Path: map[string]float64{}}
	for _, inv := range invs {
		if inv.role != role {
			continue
		}
		out.Requests++
		model.criticalPath(inv, callees, out.Path)
		for range latencyDraws {
			d := model.answer(inv, callees, cpu, rng)
			if gateway {
				d += model.Gateway.draw(rng)
			}
			all = append(all, d)
		}
	}
	if len(all) == 0 {
		return out
	}
	for op := range out.Path {
		out.Path[op] /= float64(out.Requests)
	}
	if gateway {
		out.Path["APIGateway.HTTP"] = 1
	}
	slices.Sort(all)
	out.P50 = all[len(all)/2].Round(100 * time.Microsecond)
	out.P99 = all[len(all)*99/100].Round(100 * time.Microsecond)
	return out
}

// draw is one log-normal draw with the hop's median and 99th percentile.
func (h Hop) draw(rng *rand.Rand) time.Duration {
	if h.P50 <= 0 {
		return 0
	}
	sigma := 0.0
	if h.P99 > h.P50 {
		sigma = math.Log(float64(h.P99)/float64(h.P50)) / 2.3263478740408408 // z of the 99th percentile
	}
	return time.Duration(float64(h.P50) * math.Exp(sigma*rng.NormFloat64()))
}

// answer draws one answer of inv: its root goroutine's calls in turn, the
// goroutines it fanned out to side by side (the longest), a Lambda Invoke
// as the invoke hop plus its callee's answer, then its CPU stretched to
// its memory's share. Work after the answer is left out.
func (m LatencyModel) answer(inv *invocation, callees map[string]*invocation, cpuOf map[string]time.Duration, rng *rand.Rand) time.Duration {
	inv.mu.Lock()
	calls := slices.Clone(inv.calls)
	root := inv.root
	inv.mu.Unlock()
	draw := func(c tracedCall) time.Duration {
		if c.token != "" {
			d := m.Invoke.draw(rng)
			if callee, ok := callees[c.token]; ok {
				d += m.answer(callee, callees, cpuOf, rng)
			}
			return d
		}
		return m.Hop(c.op).draw(rng)
	}
	var total time.Duration
	lanes := map[int]map[int64]time.Duration{}
	for _, c := range calls {
		switch {
		case c.after:
		case c.gid == root:
			total += draw(c)
		default:
			if lanes[c.pos] == nil {
				lanes[c.pos] = map[int64]time.Duration{}
			}
			lanes[c.pos][c.gid] += draw(c)
		}
	}
	for _, gs := range lanes {
		longest := time.Duration(0)
		for _, d := range gs {
			longest = max(longest, d)
		}
		total += longest
	}
	dm := DurationModel{FullCPUMemoryMB: m.FullCPUMemoryMB}
	return total + dm.CPUWall(inv.memoryMB, cpuOf[inv.role])
}

// criticalPath counts into path the calls inv's answer waits for (a
// fanned-out lane's every call: the model draws them all), its callees'
// included, and the CPU of each function on it.
func (m LatencyModel) criticalPath(inv *invocation, callees map[string]*invocation, path map[string]float64) {
	inv.mu.Lock()
	calls := slices.Clone(inv.calls)
	inv.mu.Unlock()
	path["CPU "+inv.role]++
	for _, c := range calls {
		if c.after {
			continue
		}
		if c.token != "" {
			path["Lambda.Invoke"]++
			if callee, ok := callees[c.token]; ok {
				m.criticalPath(callee, callees, path)
			}
			continue
		}
		path[c.op]++
	}
}
