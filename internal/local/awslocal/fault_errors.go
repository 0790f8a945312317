package awslocal

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

const injectedMessage = "awslocal: injected fault"

// TransactionConflict is the error DynamoDB returns when another request
// races a transaction on one of its items: a TransactionCanceledException
// whose CancellationReasons (one per item, in request order) hold
// TransactionConflict at conflictAt and None elsewhere.
func TransactionConflict(items, conflictAt int) error {
	if items < 1 || conflictAt < 0 || conflictAt >= items {
		panic(fmt.Sprintf("awslocal: TransactionConflict(%d, %d): index out of range", items, conflictAt))
	}
	reasons := make([]dynamodbtypes.CancellationReason, items)
	codes := make([]string, items)
	for i := range reasons {
		reasons[i] = dynamodbtypes.CancellationReason{Code: aws.String("None")}
		codes[i] = "None"
	}
	reasons[conflictAt] = dynamodbtypes.CancellationReason{
		Code:    aws.String("TransactionConflict"),
		Message: aws.String("Transaction is ongoing for the item"),
	}
	codes[conflictAt] = "TransactionConflict"
	return &dynamodbtypes.TransactionCanceledException{
		Message:             aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]"),
		CancellationReasons: reasons,
	}
}

// serviceFault is an error whose concrete type depends on the service it is
// injected into (see errorFor). Outside a Fault it reads as a generic
// smithy API error with Code.
type serviceFault struct {
	kind string // "internal", "throttled", "unavailable"
	smithy.GenericAPIError
}

// Throttled is the service's throttling error: DynamoDB
// ProvisionedThroughputExceededException, SQS RequestThrottled, SNS
// Throttled, Lambda TooManyRequestsException, S3 SlowDown. The SDK classifies
// all of them as throttles.
func Throttled() error {
	return &serviceFault{kind: "throttled", GenericAPIError: smithy.GenericAPIError{
		Code: "ThrottlingException", Message: "Rate exceeded", Fault: smithy.FaultClient,
	}}
}

// ServiceUnavailable is a 503-style server error: code ServiceUnavailable
// (SNS, which has no such code, gets its InternalError).
func ServiceUnavailable() error {
	return &serviceFault{kind: "unavailable", GenericAPIError: smithy.GenericAPIError{
		Code: "ServiceUnavailable", Message: "Service is unavailable, please retry", Fault: smithy.FaultServer,
	}}
}

// errorFor resolves a Fault's error for the service it hits.
func errorFor(service string, err error) error {
	kind := "internal"
	if err != nil {
		sf, ok := err.(*serviceFault)
		if !ok {
			return err
		}
		kind = sf.kind
	}
	msg := aws.String(injectedMessage)
	switch kind {
	case "throttled":
		switch service {
		case "DynamoDB":
			return &dynamodbtypes.ProvisionedThroughputExceededException{Message: msg}
		case "SQS":
			return &sqstypes.RequestThrottled{Message: msg}
		case "SNS":
			return &snstypes.ThrottledException{Message: msg}
		case "Lambda":
			return &lambdatypes.TooManyRequestsException{Message: msg}
		case "S3":
			return &smithy.GenericAPIError{Code: "SlowDown", Message: injectedMessage, Fault: smithy.FaultServer}
		}
		return &smithy.GenericAPIError{Code: "ThrottlingException", Message: injectedMessage, Fault: smithy.FaultClient}
	case "unavailable":
		if service == "SNS" {
			return &snstypes.InternalErrorException{Message: msg}
		}
		return &smithy.GenericAPIError{Code: "ServiceUnavailable", Message: injectedMessage, Fault: smithy.FaultServer}
	}
	switch service {
	case "DynamoDB":
		return &dynamodbtypes.InternalServerError{Message: msg}
	case "SNS":
		return &snstypes.InternalErrorException{Message: msg}
	case "Lambda":
		return &lambdatypes.ServiceException{Message: msg}
	}
	return &smithy.GenericAPIError{Code: "InternalError", Message: injectedMessage, Fault: smithy.FaultServer}
}
