package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/kit/clock"
)

// batchGetAttempts bounds the calls for one round of keys while DynamoDB
// leaves some unprocessed (throttling).
const batchGetAttempts = 8

// batchGet reads the items of keys from the events table with strongly
// consistent BatchGetItem, 100 keys a call, retrying unprocessed keys with
// the jittered backoff, and hands each item found to fn (in no particular
// order; a missing item is not handed).
func (e *Events) batchGet(ctx context.Context, keys []map[string]ddbtypes.AttributeValue, fn func(item map[string]ddbtypes.AttributeValue) error) error {
	return e.batchGetWith(ctx, keys, ddbtypes.KeysAndAttributes{ConsistentRead: aws.Bool(true)}, fn)
}

// batchGetWith is batchGet with the read's consistency and projection
// (how: its Keys are set per call). A listing reads eventually
// consistent, at half the read units.
func (e *Events) batchGetWith(ctx context.Context, keys []map[string]ddbtypes.AttributeValue, how ddbtypes.KeysAndAttributes, fn func(item map[string]ddbtypes.AttributeValue) error) error {
	for start := 0; start < len(keys); start += 100 {
		pending := keys[start:min(start+100, len(keys))]
		for attempt := 1; len(pending) > 0; attempt++ {
			ka := how
			ka.Keys = pending
			res, err := e.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{e.Table: ka}})
			if err != nil {
				return err
			}
			for _, item := range res.Responses[e.Table] {
				if err := fn(item); err != nil {
					return err
				}
			}
			pending = res.UnprocessedKeys[e.Table].Keys
			if len(pending) > 0 {
				if attempt >= batchGetAttempts {
					return fmt.Errorf("keys still unprocessed after %d attempts", attempt)
				}
				if err := clock.Sleep(ctx, e.backoff(attempt)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
