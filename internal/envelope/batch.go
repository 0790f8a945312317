package envelope

// MaxBatch is the most envelopes one ingest call takes (a JSON array of
// envelopes instead of one): what a caller with many events at hand (a
// file import) sends together, so they are committed a transaction and
// sent an SQS batch at a time instead of a call each.
const MaxBatch = 100

// CodeBatchTooLarge rejects every envelope of a batch of more than
// MaxBatch; CodeInvalidBatch a payload that starts as a batch (a JSON
// array) but is not an array of values.
const (
	CodeBatchTooLarge Code = "batch_too_large"
	CodeInvalidBatch  Code = "invalid_batch"
)

// BatchResult is one envelope's outcome in a batch: its Result, or Retry
// when an infrastructure failure (the commit's transaction failed, a
// claim-checked payload could not be stored) kept it from being stored by
// this call. Nothing of such an envelope was stored and its Result is
// empty but for EventID: publishing it again is safe. (A single publish
// returns that failure as the call's error instead.)
type BatchResult struct {
	Result
	Retry string `json:"retry,omitempty"`
}

// BatchReply is ingest's answer to a batch: one result per envelope, in
// the order sent.
type BatchReply struct {
	Results []BatchResult `json:"results"`
}
