package costmodel

import "math"

// Units are what AWS bills, summed over some calls (or per event after
// Per).
type Units struct {
	// DynamoDB on-demand request units (reads may be halves: eventually
	// consistent reads cost 0.5 per 4 KB).
	WRU float64 `json:"wru"`
	RRU float64 `json:"rru"`
	// WRUIndex is the part of WRU spent on global secondary indexes.
	WRUIndex float64 `json:"wruIndex"`
	// SQS requests on standard queues, each 64 KiB chunk of a payload
	// counting as one.
	SQSRequests float64 `json:"sqsRequests"`
	// SQSFIFORequests are the same on FIFO queues, which SQS prices
	// higher.
	SQSFIFORequests float64 `json:"sqsFifoRequests"`
	// S3 requests: tier 1 (PUT, COPY, POST, LIST), tier 2 (GET, HEAD).
	S3Tier1 float64 `json:"s3Tier1"`
	S3Tier2 float64 `json:"s3Tier2"`
	// SNS publishes (64 KiB chunks), Secrets Manager API calls.
	SNSRequests     float64 `json:"snsRequests"`
	SecretsRequests float64 `json:"secretsRequests"`
	// Lambda invocations and GB-seconds (configured memory × duration,
	// rounded up to the millisecond as billed).
	LambdaInvocations float64 `json:"lambdaInvocations"`
	LambdaGBSeconds   float64 `json:"lambdaGbSeconds"`
	// API Gateway HTTP API requests (512 KiB increments).
	APIRequests float64 `json:"apiRequests"`
	// LogBytes are CloudWatch Logs bytes ingested.
	LogBytes float64 `json:"logBytes"`
	// Traces recorded by X-Ray (a fraction: the sampled share).
	Traces float64 `json:"traces"`
	// EventBridge custom events put (64 KiB chunks): the peer
	// architecture only.
	EventBridgeEvents float64 `json:"eventBridgeEvents,omitempty"`
	// EMFBytes are the bytes of the EMF metric lines the functions wrote
	// (CloudWatch Logs ingestion; the metrics they define are a cost per
	// metric and month, not per event).
	EMFBytes float64 `json:"emfBytes"`
	// DataOutBytes are the bytes sent from AWS to the internet: the
	// deliveries to subscribers (request line, headers, body).
	DataOutBytes float64 `json:"dataOutBytes"`
	// StorageGBMonths are the DynamoDB items the path left stored (table
	// and index entries, 100 bytes of overhead each) for as long as they
	// are kept, in GB-months: billed as storage and again as
	// point-in-time recovery (every table has it on).
	StorageGBMonths float64 `json:"storageGbMonths"`
	// StateTransitions are Step Functions (standard) state transitions.
	StateTransitions float64 `json:"stateTransitions,omitempty"`
}

// Add sums o into u.
func (u *Units) Add(o Units) {
	u.WRU += o.WRU
	u.RRU += o.RRU
	u.WRUIndex += o.WRUIndex
	u.SQSRequests += o.SQSRequests
	u.SQSFIFORequests += o.SQSFIFORequests
	u.S3Tier1 += o.S3Tier1
	u.S3Tier2 += o.S3Tier2
	u.SNSRequests += o.SNSRequests
	u.SecretsRequests += o.SecretsRequests
	u.LambdaInvocations += o.LambdaInvocations
	u.LambdaGBSeconds += o.LambdaGBSeconds
	u.APIRequests += o.APIRequests
	u.LogBytes += o.LogBytes
	u.Traces += o.Traces
	u.EventBridgeEvents += o.EventBridgeEvents
	u.EMFBytes += o.EMFBytes
	u.DataOutBytes += o.DataOutBytes
	u.StorageGBMonths += o.StorageGBMonths
	u.StateTransitions += o.StateTransitions
}

// Per divides every unit by n (per event).
func (u Units) Per(n int) Units {
	if n <= 0 {
		return u
	}
	return u.Scale(1 / float64(n))
}

// Scale multiplies every unit by f.
func (u Units) Scale(f float64) Units {
	return Units{
		WRU: u.WRU * f, RRU: u.RRU * f, WRUIndex: u.WRUIndex * f, SQSRequests: u.SQSRequests * f, SQSFIFORequests: u.SQSFIFORequests * f,
		S3Tier1: u.S3Tier1 * f, S3Tier2: u.S3Tier2 * f, SNSRequests: u.SNSRequests * f, SecretsRequests: u.SecretsRequests * f,
		LambdaInvocations: u.LambdaInvocations * f, LambdaGBSeconds: u.LambdaGBSeconds * f, APIRequests: u.APIRequests * f,
		LogBytes: u.LogBytes * f, Traces: u.Traces * f, EventBridgeEvents: u.EventBridgeEvents * f,
		EMFBytes: u.EMFBytes * f, DataOutBytes: u.DataOutBytes * f, StorageGBMonths: u.StorageGBMonths * f,
		StateTransitions: u.StateTransitions * f,
	}
}

// writeUnits: one WRU per KB (1024 bytes) started, at least one.
func writeUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

// readUnits: one RRU per 4 KB started (strongly consistent), at least one.
func readUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/4096)) }

// chunks64K: SQS and SNS bill each 64 KiB chunk of a payload as a request.
func chunks64K(size int) float64 { return math.Max(1, math.Ceil(float64(size)/(64<<10))) }

// APIRequestUnits: HTTP APIs bill each 512 KiB of a request as one.
func APIRequestUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/(512<<10))) }

// LambdaGBSeconds bills a duration (rounded up to the millisecond) at
// memoryMB.
func LambdaGBSeconds(memoryMB int, ms float64) float64 {
	return float64(memoryMB) / 1024 * math.Ceil(ms) / 1000
}
