package costmodel

import "sort"

// Prices are list prices in USD, one per billed unit.
type Prices struct {
	// AsOf and Region say where they were read.
	AsOf, Region string
	// DynamoDB on-demand, per request unit.
	WRU, RRU float64
	// SQS standard queues and FIFO queues, per request (64 KiB chunk).
	SQSRequest, SQSFIFORequest float64
	// S3 Standard, per request.
	S3Tier1, S3Tier2 float64
	SNSRequest       float64
	SecretsRequest   float64
	// Lambda (arm64), per request and per GB-second.
	LambdaRequest, LambdaGBSecond float64
	// API Gateway HTTP API, per request.
	APIRequest float64
	// CloudWatch Logs standard ingestion, per byte.
	LogByte float64
	// X-Ray, per trace recorded.
	Trace float64
	// The alternatives a user would pick instead: EventBridge custom
	// events (per event put), SNS publish (per request).
	EventBridgeEvent float64
	// Data transfer out to the internet, per byte (the first 10 TB a
	// month; the account's first 100 GB a month are free, left out).
	DataOutByte float64
	// DynamoDB standard table storage and continuous backups
	// (point-in-time recovery), per GB-month (storage's first 25 GB a
	// month free, left out).
	DynamoDBStorageGBMonth, PITRGBMonth float64
	// Step Functions standard workflows, per state transition (the first
	// 4,000 a month free, left out).
	StateTransition float64
}

// USEast1 are the us-east-1 list prices used by docs/cost.md; update the
// date with the figures.
var USEast1 = Prices{
	AsOf: "2026-12-01", Region: "us-east-1",
	WRU: 0.625 / 1e6, RRU: 0.125 / 1e6,
	SQSRequest: 0.40 / 1e6, SQSFIFORequest: 0.50 / 1e6,
	S3Tier1: 0.005 / 1e3, S3Tier2: 0.0004 / 1e3,
	SNSRequest:     0.50 / 1e6,
	SecretsRequest: 0.05 / 1e4,
	LambdaRequest:  0.20 / 1e6, LambdaGBSecond: 0.0000133334,
	APIRequest: 1.00 / 1e6,
	LogByte:    0.50 / (1 << 30),
	Trace:      5.00 / 1e6,

	EventBridgeEvent: 1.00 / 1e6,

	DataOutByte:            0.09 / (1 << 30),
	DynamoDBStorageGBMonth: 0.25, PITRGBMonth: 0.20,
	StateTransition: 0.025 / 1e3,
}

// Line is one billed line: what, and its dollars.
type Line struct {
	Item    string
	Dollars float64
}

// Dollars prices u line by line, largest first.
func (p Prices) Dollars(u Units) []Line {
	lines := []Line{
		{"DynamoDB writes", u.WRU * p.WRU},
		{"DynamoDB reads", u.RRU * p.RRU},
		{"SQS requests", u.SQSRequests*p.SQSRequest + u.SQSFIFORequests*p.SQSFIFORequest},
		{"S3 requests", u.S3Tier1*p.S3Tier1 + u.S3Tier2*p.S3Tier2},
		{"SNS", u.SNSRequests * p.SNSRequest},
		{"Secrets Manager", u.SecretsRequests * p.SecretsRequest},
		{"Lambda requests", u.LambdaInvocations * p.LambdaRequest},
		{"Lambda compute", u.LambdaGBSeconds * p.LambdaGBSecond},
		{"API Gateway", u.APIRequests * p.APIRequest},
		{"CloudWatch Logs", u.LogBytes * p.LogByte},
		{"CloudWatch Logs (EMF metrics)", u.EMFBytes * p.LogByte},
		{"Data transfer out", u.DataOutBytes * p.DataOutByte},
		{"DynamoDB storage", u.StorageGBMonths * p.DynamoDBStorageGBMonth},
		{"DynamoDB PITR", u.StorageGBMonths * p.PITRGBMonth},
		{"Step Functions", u.StateTransitions * p.StateTransition},
		{"X-Ray", u.Traces * p.Trace},
		{"EventBridge", u.EventBridgeEvents * p.EventBridgeEvent},
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].Dollars > lines[j].Dollars })
	return lines
}

// Total is the sum of Dollars.
func (p Prices) Total(u Units) float64 {
	t := 0.0
	for _, l := range p.Dollars(u) {
		t += l.Dollars
	}
	return t
}
