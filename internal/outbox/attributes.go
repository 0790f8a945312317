package outbox

// Message attribute names every topic message carries.
const (
	// AttrEventKey is the event's storage key (ledger.Key), so consumers
	// find its outbox row without the topology.
	AttrEventKey = "eventKey"
	AttrEventID  = "eventId"
	AttrTenantID = "tenantId"
	AttrType     = "type"
	AttrTopic    = "topic"
	AttrReplayOf = "replayOf"
)

// AttrCompletionOf marks a copy a consumer sends when it ran a message's
// side effect but could not record its completion (consume): "<hop>/<id>",
// the hop count and the SQS message id that holds the outbox row's lease.
// The copy's receiver records that completion and never runs the handler.
const AttrCompletionOf = "completionOf"

// Attributes a consumer adds when it moves a poison message to the topic's
// DLQ itself (SQS redrive adds none); the DLQ archiver reads them.
const (
	AttrErrorCode    = "errorCode"
	AttrErrorMessage = "errorMessage"
	// AttrErrorSummary is errorMessage without a subscriber's answer
	// (consume.Reason.Summary): what alerts quote, because an alert
	// cannot be erased.
	AttrErrorSummary = "errorSummary"
	AttrFailedAt     = "failedAt"
)
