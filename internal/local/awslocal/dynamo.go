package awslocal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	"github.com/truora/minidyn/server"
)

// DynamoHandler serves the DynamoDB JSON API with minidyn (HTTP mode) and
// fixes the gaps that matter to the platform. Everything not listed here
// passes through to minidyn untouched (transactions, cancellation reasons,
// conditional checks and GSI queries work there):
//
//   - one mutex serialises all requests: minidyn's CreateTable and
//     DescribeTable do not take its lock, so a table created in one goroutine
//     can race a describe in another, and serialising also lets the size
//     check below inspect and restore items atomically;
//   - CreateTable, DescribeTable, UpdateTable and DeleteTable report
//     TableStatus (and every GSI's IndexStatus) as ACTIVE, so the SDK's
//     TableExists waiter and provisioning code written for AWS work;
//   - UpdateTimeToLive, DescribeTimeToLive and ListTables, which minidyn
//     lacks, are answered here (TTL is recorded, never enforced: items do not
//     expire locally, and AWS only promises deletion within days anyway);
//     other operations minidyn lacks get a decodable
//     UnknownOperationException instead of its plain-text 400;
//   - the 400 KB item limit is enforced (see dynamo_items.go);
//   - a top-level REMOVE in an UpdateItem or transactional Update, which
//     minidyn ignores, is completed here: the attribute leaves the item and
//     every index keyed on it (see topLevelRemoves, removeAttributes);
//   - an index query resumes from its ExclusiveStartKey's position even
//     when that item has left the index meanwhile (see query).
type DynamoHandler struct {
	mu     sync.Mutex
	inner  http.Handler
	tables map[string]*dynamoTable
}

type dynamoTable struct {
	keys []string // key attribute names: hash, then range if any
	// attrDefs and billingMode are echoed in table descriptions, which
	// minidyn leaves without them.
	attrDefs    json.RawMessage
	billingMode string
	ttlAttr     string
	ttlEnabled  bool
}

// NewDynamoHandler returns a fresh, empty DynamoDB emulator.
func NewDynamoHandler() *DynamoHandler {
	return &DynamoHandler{inner: server.NewServer(), tables: map[string]*dynamoTable{}}
}

// DynamoDB's JSON error type prefix, as sent by the real service.
const dynamoErrPrefix = "com.amazonaws.dynamodb.v20120810#"

// Messages of the errors the wrapper returns, exported so tests and
// adapters can recognise them. The put message is what DynamoDB returns for
// PutItem, BatchWriteItem and transactional Puts; UpdateItem's differs.
const (
	ItemTooLargeMessage       = "Item size has exceeded the maximum allowed size"
	UpdateItemTooLargeMessage = "Item size to update has exceeded the maximum allowed size"
)

// TTLAttribute reports the TTL attribute enabled on a table (for tests;
// items never expire locally).
func (h *DynamoHandler) TTLAttribute(table string) (attr string, enabled bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.tables[table]; ok && t.ttlEnabled {
		return t.ttlAttr, true
	}
	return "", false
}

type dynamoResponse struct {
	status int
	body   []byte
}

func (h *DynamoHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}

	resp := h.serialised(r.Context(), r.Method, op, body)

	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

// serialised runs one call under the mutex. A panic inside minidyn becomes
// a 500 (which the SDK reports and retries) instead of a dropped connection,
// and cannot leave the mutex locked.
func (h *DynamoHandler) serialised(ctx context.Context, method, op string, body []byte) (resp dynamoResponse) {
	h.mu.Lock()
	defer h.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			resp = dynamoError(http.StatusInternalServerError, "InternalServerError",
				fmt.Sprintf("awslocal: minidyn panicked in %s: %v", op, p))
		}
	}()
	return h.handle(ctx, method, op, body)
}

// handle runs one API call with h.mu held.
func (h *DynamoHandler) handle(ctx context.Context, method, op string, body []byte) dynamoResponse {
	if method != http.MethodPost {
		return dynamoError(http.StatusMethodNotAllowed, "UnknownOperationException", "DynamoDB only accepts POST")
	}
	switch op {
	case "CreateTable":
		return h.createTable(ctx, body)
	case "DescribeTable":
		return h.describe(h.forward(ctx, op, body), "Table", "ACTIVE")
	case "UpdateTable":
		return h.describe(h.forward(ctx, op, body), "TableDescription", "ACTIVE")
	case "DeleteTable":
		return h.deleteTable(ctx, body)
	case "ListTables":
		return h.listTables(body)
	case "UpdateTimeToLive":
		return h.updateTimeToLive(body)
	case "DescribeTimeToLive":
		return h.describeTimeToLive(body)
	case "PutItem":
		return h.putItem(ctx, body)
	case "BatchWriteItem":
		return h.batchWriteItem(ctx, body)
	case "UpdateItem":
		return h.updateItem(ctx, body)
	case "TransactWriteItems":
		return h.transactWriteItems(ctx, body)
	case "Query":
		return h.query(ctx, body)
	}
	resp := h.forward(ctx, op, body)
	if resp.status == http.StatusBadRequest && !json.Valid(resp.body) {
		// minidyn answers unknown operations with a plain-text 400, which
		// the SDK cannot decode; give it a proper error shape.
		return dynamoError(http.StatusBadRequest, "UnknownOperationException",
			fmt.Sprintf("the local DynamoDB emulator (minidyn) does not implement %s", op))
	}
	return resp
}

// forward sends one call to minidyn in-process.
func (h *DynamoHandler) forward(ctx context.Context, op string, body []byte) dynamoResponse {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	rec := httptest.NewRecorder()
	h.inner.ServeHTTP(rec, req)
	return dynamoResponse{status: rec.Code, body: rec.Body.Bytes()}
}

// call forwards a request built from v.
func (h *DynamoHandler) call(ctx context.Context, op string, v any) dynamoResponse {
	b, err := json.Marshal(v)
	if err != nil {
		return dynamoError(http.StatusInternalServerError, "InternalServerError", err.Error())
	}
	return h.forward(ctx, op, b)
}

func dynamoError(status int, typ, msg string) dynamoResponse {
	b, _ := json.Marshal(map[string]string{"__type": dynamoErrPrefix + typ, "message": msg})
	return dynamoResponse{status: status, body: b}
}

func validationError(msg string) dynamoResponse {
	return dynamoError(http.StatusBadRequest, "ValidationException", msg)
}

func tableNotFound(name string) dynamoResponse {
	return dynamoError(http.StatusBadRequest, "ResourceNotFoundException",
		fmt.Sprintf("Requested resource not found: Table: %s not found", name))
}

// describe completes a table description (under key "Table" or
// "TableDescription"): the table reads as status and every GSI as ACTIVE,
// with the ARN, attribute definitions and billing mode minidyn omits.
func (h *DynamoHandler) describe(resp dynamoResponse, key, status string) dynamoResponse {
	if resp.status != http.StatusOK {
		return resp
	}
	var out map[string]any
	dec := json.NewDecoder(bytes.NewReader(resp.body))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return resp
	}
	desc, ok := out[key].(map[string]any)
	if !ok {
		return resp
	}
	desc["TableStatus"] = status
	if name, ok := desc["TableName"].(string); ok {
		desc["TableArn"] = fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", Region, AccountID, name)
		if t, ok := h.tables[name]; ok {
			if len(t.attrDefs) > 0 {
				desc["AttributeDefinitions"] = t.attrDefs
			}
			if t.billingMode != "" {
				desc["BillingModeSummary"] = map[string]string{"BillingMode": t.billingMode}
			}
		}
	}
	if gsis, ok := desc["GlobalSecondaryIndexes"].([]any); ok {
		for _, g := range gsis {
			if gm, ok := g.(map[string]any); ok {
				gm["IndexStatus"] = "ACTIVE"
			}
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return resp
	}
	return dynamoResponse{status: resp.status, body: b}
}

func (h *DynamoHandler) createTable(ctx context.Context, body []byte) dynamoResponse {
	var in struct {
		TableName            string
		KeySchema            []struct{ AttributeName, KeyType string }
		AttributeDefinitions json.RawMessage
		BillingMode          string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return validationError(err.Error())
	}
	resp := h.forward(ctx, "CreateTable", body)
	if resp.status == http.StatusOK {
		if in.BillingMode == "" {
			in.BillingMode = "PROVISIONED"
		}
		t := &dynamoTable{attrDefs: in.AttributeDefinitions, billingMode: in.BillingMode}
		for _, kt := range []string{"HASH", "RANGE"} {
			for _, k := range in.KeySchema {
				if k.KeyType == kt {
					t.keys = append(t.keys, k.AttributeName)
				}
			}
		}
		h.tables[in.TableName] = t
	}
	return h.describe(resp, "TableDescription", "ACTIVE")
}

func (h *DynamoHandler) deleteTable(ctx context.Context, body []byte) dynamoResponse {
	var in struct{ TableName string }
	if err := json.Unmarshal(body, &in); err != nil {
		return validationError(err.Error())
	}
	resp := h.describe(h.forward(ctx, "DeleteTable", body), "TableDescription", "DELETING")
	if resp.status == http.StatusOK {
		delete(h.tables, in.TableName)
	}
	return resp
}

func (h *DynamoHandler) listTables(body []byte) dynamoResponse {
	var in struct {
		ExclusiveStartTableName string
		Limit                   int
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			return validationError(err.Error())
		}
	}
	if in.Limit <= 0 || in.Limit > 100 {
		in.Limit = 100
	}
	names := make([]string, 0, len(h.tables))
	for n := range h.tables {
		if n > in.ExclusiveStartTableName {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := map[string]any{}
	if len(names) > in.Limit {
		names = names[:in.Limit]
		out["LastEvaluatedTableName"] = names[len(names)-1]
	}
	out["TableNames"] = names
	b, _ := json.Marshal(out)
	return dynamoResponse{status: http.StatusOK, body: b}
}

type ttlSpec struct {
	AttributeName string
	Enabled       bool
}

// updateTimeToLive mirrors AWS, including its refusal to enable TTL twice,
// so provisioning code that is not idempotent fails locally too.
func (h *DynamoHandler) updateTimeToLive(body []byte) dynamoResponse {
	var in struct {
		TableName               string
		TimeToLiveSpecification *ttlSpec
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return validationError(err.Error())
	}
	spec := in.TimeToLiveSpecification
	if spec == nil || spec.AttributeName == "" {
		return validationError("1 validation error detected: Value null at 'timeToLiveSpecification' failed to satisfy constraint: Member must not be null")
	}
	t, ok := h.tables[in.TableName]
	if !ok {
		return tableNotFound(in.TableName)
	}
	switch {
	case spec.Enabled && t.ttlEnabled:
		return validationError("TimeToLive is already enabled")
	case !spec.Enabled && !t.ttlEnabled:
		return validationError("TimeToLive is already disabled")
	case !spec.Enabled && spec.AttributeName != t.ttlAttr:
		return validationError("TimeToLive attribute name does not match the enabled attribute")
	}
	t.ttlEnabled = spec.Enabled
	t.ttlAttr = spec.AttributeName
	b, _ := json.Marshal(map[string]any{"TimeToLiveSpecification": spec})
	return dynamoResponse{status: http.StatusOK, body: b}
}

func (h *DynamoHandler) describeTimeToLive(body []byte) dynamoResponse {
	var in struct{ TableName string }
	if err := json.Unmarshal(body, &in); err != nil {
		return validationError(err.Error())
	}
	t, ok := h.tables[in.TableName]
	if !ok {
		return tableNotFound(in.TableName)
	}
	desc := map[string]any{"TimeToLiveStatus": "DISABLED"}
	if t.ttlEnabled {
		desc = map[string]any{"TimeToLiveStatus": "ENABLED", "AttributeName": t.ttlAttr}
	}
	b, _ := json.Marshal(map[string]any{"TimeToLiveDescription": desc})
	return dynamoResponse{status: http.StatusOK, body: b}
}
