package costmodel

import "time"

// Peer is the architecture a platform team would build instead of this
// one, priced with the same table: API Gateway (for a webhook) → a Lambda
// that verifies the request and puts the event on an EventBridge bus
// (PutEvents) → a rule per subscriber targeting its own SQS queue (with a
// DLQ) → the subscriber's consumer Lambda, which makes its side effect
// idempotent with a Powertools-style table: a conditional PutItem of an
// INPROGRESS record, then an UpdateItem to COMPLETED with the response.
// No ledger, no outbox, no sweeper, no incident store.
//
// What it lacks, guarantee by guarantee (docs/cost.md renders this):
// dedupe at ingest (a redelivered or concurrently repeated event is put
// and fanned out again; each consumer deduplicates only while its
// idempotency record lives, an hour by default), transactional fan-out
// (PutEvents can fail some entries, and a caller that was told nothing
// must retry: nothing records that an event was accepted), the sweeper
// (no recovery of a lost put beyond the caller; EventBridge retries a
// failed target for 24 h, then its DLQ), incidents (dead letters wait in
// an SQS DLQ for at most 14 days: no store, no payload archive, no
// triage), replay (EventBridge archive and replay re-sends whole time
// ranges to every rule, at extra cost; no replay of one incident, no
// attestation that it succeeded).
type Peer struct {
	Name string `json:"name"`
	What string `json:"what"`
	// Subscribers is how many queues each event reaches.
	Subscribers int `json:"subscribers"`
	// EventBytes is the event as put and queued.
	EventBytes int `json:"eventBytes"`
	// ViaAPI: the event arrives through API Gateway (a webhook), not a
	// direct invoke.
	ViaAPI bool `json:"viaApi"`
	// BatchSize is the consumers' batch (receives, deletes and
	// invocations are shared by it).
	BatchSize int `json:"batchSize"`
	// IdempotencyItemBytes is the idempotency record as written
	// (key hash, status, expiries, the stored response).
	IdempotencyItemBytes int `json:"idempotencyItemBytes"`
	// FIFO: the subscribers' queues are FIFO (EventBridge targets a FIFO
	// queue with a message group), as this platform's queue is for the
	// same events.
	FIFO bool `json:"fifo,omitempty"`
	// GBSeconds per event is the peer's own compute (PeerCompute: its
	// front function and its consumers, priced with the same duration
	// model as this platform's functions).
	GBSeconds float64 `json:"gbSeconds"`
	// LogBytes, EMFBytes and TraceShare per event are this platform's for
	// the same events (a team logs, emits metrics and samples traces
	// too); DataOutBytes are the same deliveries to the subscribers.
	LogBytes     float64 `json:"logBytes"`
	EMFBytes     float64 `json:"emfBytes"`
	DataOutBytes float64 `json:"dataOutBytes"`
	TraceShare   float64 `json:"traceShare"`
	// IdempotencyKeptHours is how long an idempotency record is kept
	// (Powertools' default expiry: an hour).
	IdempotencyKeptHours float64 `json:"idempotencyKeptHours"`
}

// PeerCompute is the peer's Lambda compute per event at model: a front
// function of frontMB that verifies the request (frontCPU) and puts the
// event (one EventBridge PutEvents), and per subscriber a consumer of
// consumerMB that, per message, puts and updates its idempotency record
// around the side effect (consumerCPU per message; a batch's messages
// run one after another, as a Powertools handler does), at batch
// messages per invocation.
func PeerCompute(model DurationModel, frontMB int, frontCPU time.Duration, consumerMB int, consumerCPU time.Duration, subscribers, batch int) float64 {
	batch = max(batch, 1)
	front := Billed(model.Latency("EventBridge.PutEvents") + model.CPUWall(frontMB, frontCPU))
	perMessage := model.Latency("DynamoDB.PutItem") + model.Latency("DynamoDB.UpdateItem") + model.CPUWall(consumerMB, consumerCPU)
	consumer := Billed(time.Duration(batch) * perMessage)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return LambdaGBSeconds(frontMB, ms(front)) + float64(subscribers)*LambdaGBSeconds(consumerMB, ms(consumer))/float64(batch)
}

// Units are what one event costs on the peer architecture.
func (p Peer) Units() Units {
	batch := float64(max(p.BatchSize, 1))
	subs := float64(max(p.Subscribers, 0))
	u := Units{
		EventBridgeEvents: chunks64K(p.EventBytes),
		// Per subscriber: EventBridge's SendMessage to the target queue
		// (billed to the queue's owner), a share of a receive and of a
		// delete.
		SQSRequests: subs * (chunks64K(p.EventBytes) + 2/batch),
		// The INPROGRESS put and the COMPLETED update; no index.
		WRU:               subs * 2 * writeUnits(p.IdempotencyItemBytes),
		LambdaInvocations: 1 + subs/batch,
		LambdaGBSeconds:   p.GBSeconds,
		LogBytes:          p.LogBytes,
		EMFBytes:          p.EMFBytes,
		DataOutBytes:      p.DataOutBytes,
		Traces:            p.TraceShare,
		StorageGBMonths:   subs * float64(p.IdempotencyItemBytes+itemOverhead) / (1 << 30) * p.IdempotencyKeptHours / 24 / daysPerMonth,
	}
	if p.FIFO {
		u.SQSRequests, u.SQSFIFORequests = 0, u.SQSRequests
	}
	if p.ViaAPI {
		u.APIRequests = APIRequestUnits(p.EventBytes)
	}
	return u
}
