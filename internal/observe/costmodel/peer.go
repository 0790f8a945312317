package costmodel

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
	// GBSeconds and LogBytes per event are taken from this platform's
	// measured path for the same events, so the comparison is of the
	// architectures' billed requests, not of the code (the peer's front
	// function does less than webhook and ingest together: read its
	// compute as an upper bound).
	GBSeconds  float64 `json:"gbSeconds"`
	LogBytes   float64 `json:"logBytes"`
	TraceShare float64 `json:"traceShare"`
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
		Traces:            p.TraceShare,
	}
	if p.ViaAPI {
		u.APIRequests = APIRequestUnits(p.EventBytes)
	}
	return u
}
