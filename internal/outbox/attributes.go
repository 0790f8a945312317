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
