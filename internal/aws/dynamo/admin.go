package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/aws/table"
)

// Admin is the admin function's table: console sessions (session#<id>)
// and each source's sign-in record (signin#<source>), one small item each
// under sk "-", with the table's TTL. Nothing is deleted: a sign-out sets
// ended, a successful sign-in overwrites the record with a clean one.
type Admin struct {
	Client *dynamodb.Client
	Table  string
}

var (
	_ admin.Sessions = (*Admin)(nil)
	_ admin.SignIns  = (*Admin)(nil)
)

const adminItemSK = "-"

func (a *Admin) key(pk string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{table.AttrPK: str(pk), table.AttrSK: str(adminItemSK)}
}

func sessionPK(id string) string    { return "session#" + id }
func signInPK(source string) string { return "signin#" + source }

func msOf(v ddbtypes.AttributeValue) time.Time {
	ms, err := strconv.ParseInt(numOf(v), 10, 64)
	if err != nil || ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func msAttr(t time.Time) ddbtypes.AttributeValue {
	if t.IsZero() {
		return num(0)
	}
	return num(t.UnixMilli())
}

// ttlOf is an item's expiresAt: epoch seconds, rounded up so an item never
// expires before its logical end.
func ttlOf(t time.Time) ddbtypes.AttributeValue {
	return num(t.Add(time.Second - 1).Unix())
}

// StartSession writes a new session item, refusing an id in use.
func (a *Admin) StartSession(ctx context.Context, s admin.Session) error {
	item := a.key(sessionPK(s.ID))
	item["started"], item["expires"], item["lastSeen"], item["ended"] = msAttr(s.Started), msAttr(s.Expires), msAttr(s.LastSeen), num(0)
	item["source"] = str(s.Source)
	item[table.AttrExpiresAt] = ttlOf(s.Expires)
	_, err := a.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(a.Table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")})
	var ccf *ddbtypes.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return admin.ErrSessionExists
	case err != nil:
		return fmt.Errorf("dynamo: start console session: %w", err)
	}
	return nil
}

// Session reads a session (strongly consistent: a sign-out elsewhere is
// seen by the next request).
func (a *Admin) Session(ctx context.Context, id string) (admin.Session, error) {
	out, err := a.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(a.Table), Key: a.key(sessionPK(id)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return admin.Session{}, fmt.Errorf("dynamo: read console session: %w", err)
	}
	if out.Item == nil {
		return admin.Session{}, admin.ErrNoSession
	}
	it := out.Item
	return admin.Session{ID: id, Started: msOf(it["started"]), Expires: msOf(it["expires"]), LastSeen: msOf(it["lastSeen"]),
		Ended: msOf(it["ended"]), Source: strOf(it["source"])}, nil
}

// TouchSession moves lastSeen forward on a session not ended.
func (a *Admin) TouchSession(ctx context.Context, id string, at time.Time) error {
	_, err := a.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(a.Table), Key: a.key(sessionPK(id)),
		UpdateExpression:          aws.String("SET lastSeen = :at"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND ended = :zero"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":at": msAttr(at), ":zero": num(0)},
	})
	var ccf *ddbtypes.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return admin.ErrNoSession
	case err != nil:
		return fmt.Errorf("dynamo: touch console session: %w", err)
	}
	return nil
}

// EndSession sets ended once (a second sign-out keeps the first time).
func (a *Admin) EndSession(ctx context.Context, id string, at time.Time) error {
	_, err := a.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(a.Table), Key: a.key(sessionPK(id)),
		UpdateExpression:          aws.String("SET ended = :at"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND ended = :zero"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":at": msAttr(at), ":zero": num(0)},
	})
	var ccf *ddbtypes.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("dynamo: end console session: %w", err)
	}
	return nil
}

// SignIn reads a source's record (strongly consistent: the conditional
// save after it must see the latest version).
func (a *Admin) SignIn(ctx context.Context, source string) (admin.SignInRecord, error) {
	out, err := a.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(a.Table), Key: a.key(signInPK(source)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return admin.SignInRecord{}, fmt.Errorf("dynamo: read sign-in record: %w", err)
	}
	if out.Item == nil {
		return admin.SignInRecord{}, nil
	}
	it := out.Item
	failures, _ := strconv.Atoi(numOf(it["failures"]))
	version, _ := strconv.ParseInt(numOf(it["version"]), 10, 64)
	return admin.SignInRecord{Failures: failures, LastAt: msOf(it["lastAt"]), LockedUntil: msOf(it["lockedUntil"]),
		Expires: msOf(it["expires"]), Version: version}, nil
}

// SaveSignIn writes next over prev, conditional on prev's version (or on
// there being no record for version 0).
func (a *Admin) SaveSignIn(ctx context.Context, source string, prev, next admin.SignInRecord) error {
	item := a.key(signInPK(source))
	item["failures"] = num(int64(next.Failures))
	item["lastAt"], item["lockedUntil"], item["expires"] = msAttr(next.LastAt), msAttr(next.LockedUntil), msAttr(next.Expires)
	item["version"] = num(prev.Version + 1)
	item[table.AttrExpiresAt] = ttlOf(next.Expires)
	in := &dynamodb.PutItemInput{TableName: aws.String(a.Table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}
	if prev.Version != 0 {
		in.ConditionExpression = aws.String("version = :v")
		in.ExpressionAttributeValues = map[string]ddbtypes.AttributeValue{":v": num(prev.Version)}
	}
	_, err := a.Client.PutItem(ctx, in)
	var ccf *ddbtypes.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return admin.ErrSignInChanged
	case err != nil:
		return fmt.Errorf("dynamo: save sign-in record: %w", err)
	}
	return nil
}
