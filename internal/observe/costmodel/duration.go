package costmodel

import (
	"math"
	"time"
)

// DurationModel is what a Lambda invocation's billed duration is made of
// when the emulators' clocks are not to be trusted (they share a loaded
// machine, and they are not AWS): the time the handler waits on each AWS
// call on its critical path, at an in-region latency stated here, plus its
// own CPU time stretched to the CPU share its memory size buys. The inputs
// that vary with the code are measured on the real path: which calls each
// invocation makes and from which goroutine (every run), and the handler's
// CPU time (a CPU profile labelled per invocation, ProfileCPU, kept with
// the figures because CPU time on a shared machine still moves with its
// load); the latencies are assumptions, in one place.
type DurationModel struct {
	// Call is the round trip of one call, by "Service.Operation", as a
	// function in the same region sees it (a warm connection, the SDK's
	// serialization and signing included in the CPU time, not here).
	Call map[string]time.Duration
	// Service is the round trip of a service's other operations, by
	// service id; Default of every other call.
	Service map[string]time.Duration
	Default time.Duration
	// InvokeOverhead is what a synchronous Lambda Invoke adds to the
	// callee's own duration (routing to a warm environment, the payload
	// both ways).
	InvokeOverhead time.Duration
	// FullCPUMemoryMB is the memory size at which a function has one vCPU
	// (AWS: 1,769 MB); below it the handler's CPU time is stretched by
	// FullCPUMemoryMB/memory (CPU-credit bound: an upper bound, short
	// bursts may run faster).
	FullCPUMemoryMB int
}

// InRegion is the model docs/cost.md prices with. DynamoDB's single-item
// operations are single-digit milliseconds (AWS's own figure): reads at 5,
// writes at 8 (acknowledged by two of three replicas), queries and batches
// at 10, transactions (two phases) at 20. SQS documents typical latencies
// "in the tens or low hundreds of milliseconds": 20. S3 documents 100-200
// ms for small objects: 100. SNS, Secrets Manager, SSM and the rest: 20.
var InRegion = DurationModel{
	Call: map[string]time.Duration{
		"DynamoDB.GetItem": 5 * time.Millisecond, "DynamoDB.PutItem": 8 * time.Millisecond,
		"DynamoDB.UpdateItem": 8 * time.Millisecond, "DynamoDB.DeleteItem": 8 * time.Millisecond,
		"DynamoDB.Query": 10 * time.Millisecond, "DynamoDB.Scan": 10 * time.Millisecond,
		"DynamoDB.BatchGetItem": 10 * time.Millisecond, "DynamoDB.BatchWriteItem": 10 * time.Millisecond,
		"DynamoDB.BatchExecuteStatement": 10 * time.Millisecond,
		"DynamoDB.TransactWriteItems":    20 * time.Millisecond, "DynamoDB.TransactGetItems": 20 * time.Millisecond,
	},
	Service: map[string]time.Duration{
		"DynamoDB": 10 * time.Millisecond, "SQS": 20 * time.Millisecond, "S3": 100 * time.Millisecond,
	},
	Default:         20 * time.Millisecond,
	InvokeOverhead:  20 * time.Millisecond,
	FullCPUMemoryMB: 1769,
}

// Latency is the modelled round trip of op ("Service.Operation").
func (m DurationModel) Latency(op string) time.Duration {
	if d, ok := m.Call[op]; ok {
		return d
	}
	for i := range op {
		if op[i] == '.' {
			if d, ok := m.Service[op[:i]]; ok {
				return d
			}
			break
		}
	}
	return m.Default
}

// CPUWall is how long cpu of a full core takes on a function of memoryMB:
// its share of a vCPU is memoryMB/FullCPUMemoryMB (at most one core
// counted: the handlers are not CPU-parallel).
func (m DurationModel) CPUWall(memoryMB int, cpu time.Duration) time.Duration {
	if memoryMB <= 0 || memoryMB >= m.FullCPUMemoryMB {
		return cpu
	}
	return time.Duration(math.Round(float64(cpu) * float64(m.FullCPUMemoryMB) / float64(memoryMB)))
}

// Billed is a modelled duration as Lambda bills it: rounded up to the
// millisecond.
func Billed(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(float64(d)/float64(time.Millisecond))) * time.Millisecond
}
