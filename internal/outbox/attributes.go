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

// AttrCompletionAttempt travels with AttrCompletionOf: the delivery
// attempt the carried completion records (JSON of outbox.Attempt and its
// number's context, without the subscriber's answer: a message attribute
// is no place for subject data).
const AttrCompletionAttempt = "completionAttempt"

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
