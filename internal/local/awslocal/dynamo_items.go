package awslocal

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// This file holds the item-level checks of DynamoHandler: the 400 KB limit
// and the REMOVE guard. They run with the handler's mutex held, so an
// update can be applied, measured and rolled back without anyone seeing the
// oversized intermediate state.

func removeRejection(paths []string) dynamoResponse {
	return validationError(fmt.Sprintf(
		"awslocal: UpdateExpression REMOVEs top-level attribute(s) %s. The local DynamoDB emulator (minidyn) "+
			"silently ignores a top-level REMOVE, so this update would leave the attribute (and any sparse "+
			"GSI entry keyed on it) behind locally while AWS removes it. The platform never REMOVEs attributes; "+
			"overwrite the attribute instead, e.g. SET sweepPk = :done (architecture §4).",
		strings.Join(paths, ", ")))
}

// checkPut rejects an item that is over DynamoDB's size limit, the way
// DynamoDB validates PutItem, BatchWriteItem and transactional Put requests
// before applying anything.
func checkPut(item map[string]any) (dynamoResponse, bool) {
	if ItemSize(item) > MaxItemSize {
		return validationError(ItemTooLargeMessage), false
	}
	return dynamoResponse{}, true
}

func (h *DynamoHandler) putItem(ctx context.Context, body []byte) dynamoResponse {
	var in struct{ Item map[string]any }
	if err := json.Unmarshal(body, &in); err == nil {
		if resp, ok := checkPut(in.Item); !ok {
			return resp
		}
	}
	return h.forward(ctx, "PutItem", body)
}

func (h *DynamoHandler) batchWriteItem(ctx context.Context, body []byte) dynamoResponse {
	var in struct {
		RequestItems map[string][]struct {
			PutRequest *struct{ Item map[string]any }
		}
	}
	if err := json.Unmarshal(body, &in); err == nil {
		for _, reqs := range in.RequestItems {
			for _, r := range reqs {
				if r.PutRequest == nil {
					continue
				}
				if resp, ok := checkPut(r.PutRequest.Item); !ok {
					return resp
				}
			}
		}
	}
	return h.forward(ctx, "BatchWriteItem", body)
}

// image is an item as stored before or after a write: raw for restoring
// byte for byte, decoded for measuring.
type image struct {
	table string
	key   json.RawMessage
	raw   json.RawMessage // nil when the item did not exist
	item  map[string]any
}

// getImage reads one item straight from minidyn. ok is false when the read
// itself failed (unknown table, bad key), in which case the caller lets the
// write go through and report that error itself.
func (h *DynamoHandler) getImage(ctx context.Context, table string, key json.RawMessage) (image, bool) {
	img := image{table: table, key: key}
	resp := h.call(ctx, "GetItem", map[string]any{"TableName": table, "Key": key, "ConsistentRead": true})
	if resp.status != http.StatusOK {
		return img, false
	}
	var out struct{ Item json.RawMessage }
	if err := json.Unmarshal(resp.body, &out); err != nil {
		return img, false
	}
	if len(out.Item) == 0 || string(out.Item) == "null" {
		return img, true
	}
	if err := json.Unmarshal(out.Item, &img.item); err != nil {
		return img, false
	}
	if len(img.item) > 0 {
		img.raw = out.Item
	}
	return img, true
}

// restore puts an item back as it was (or deletes it if it did not exist).
func (h *DynamoHandler) restore(ctx context.Context, img image) {
	if img.raw == nil {
		h.call(ctx, "DeleteItem", map[string]any{"TableName": img.table, "Key": img.key})
		return
	}
	h.call(ctx, "PutItem", map[string]any{"TableName": img.table, "Item": img.raw})
}

// keyOf extracts the primary key of a full item, using the key schema
// recorded at CreateTable.
func (h *DynamoHandler) keyOf(table string, item json.RawMessage) (json.RawMessage, bool) {
	t, ok := h.tables[table]
	if !ok {
		return nil, false
	}
	var attrs map[string]json.RawMessage
	if err := json.Unmarshal(item, &attrs); err != nil {
		return nil, false
	}
	key := map[string]json.RawMessage{}
	for _, k := range t.keys {
		v, ok := attrs[k]
		if !ok {
			return nil, false
		}
		key[k] = v
	}
	b, err := json.Marshal(key)
	return b, err == nil
}

// updateItem applies the update, then measures the resulting item and
// restores the previous image if it is over the limit. DynamoDB computes
// the new item before writing; with requests serialised the observable
// effect is the same.
func (h *DynamoHandler) updateItem(ctx context.Context, body []byte) dynamoResponse {
	var in struct {
		TableName        string
		Key              json.RawMessage
		UpdateExpression string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return h.forward(ctx, "UpdateItem", body)
	}
	if paths := topLevelRemoves(in.UpdateExpression); len(paths) > 0 {
		return removeRejection(paths)
	}
	before, ok := h.getImage(ctx, in.TableName, in.Key)
	resp := h.forward(ctx, "UpdateItem", body)
	if resp.status != http.StatusOK || !ok {
		return resp
	}
	after, ok := h.getImage(ctx, in.TableName, in.Key)
	if ok && ItemSize(after.item) > MaxItemSize {
		h.restore(ctx, before)
		return validationError(UpdateItemTooLargeMessage)
	}
	return resp
}

type transactItem struct {
	Put *struct {
		TableName string
		Item      json.RawMessage
	}
	Update *struct {
		TableName        string
		Key              json.RawMessage
		UpdateExpression string
	}
	Delete *struct {
		TableName string
		Key       json.RawMessage
	}
}

// transactWriteItems validates Puts up front (DynamoDB rejects an oversized
// Put as a ValidationException on the whole request) and checks Updates
// after the fact: DynamoDB only learns an update makes an item too big while
// executing it, and reports that as TransactionCanceledException with a
// ValidationError reason at the update's index ("None" elsewhere), which is
// what we return after rolling every item of the transaction back.
func (h *DynamoHandler) transactWriteItems(ctx context.Context, body []byte) dynamoResponse {
	var in struct{ TransactItems []transactItem }
	if err := json.Unmarshal(body, &in); err != nil {
		return h.forward(ctx, "TransactWriteItems", body)
	}
	hasUpdate := false
	for _, it := range in.TransactItems {
		switch {
		case it.Update != nil:
			if paths := topLevelRemoves(it.Update.UpdateExpression); len(paths) > 0 {
				return removeRejection(paths)
			}
			hasUpdate = true
		case it.Put != nil:
			var item map[string]any
			if err := json.Unmarshal(it.Put.Item, &item); err == nil {
				if resp, ok := checkPut(item); !ok {
					return resp
				}
			}
		}
	}
	if !hasUpdate {
		return h.forward(ctx, "TransactWriteItems", body)
	}

	// Snapshot every item the transaction writes, so an oversized update
	// can be undone together with the rest of the transaction.
	var before []image
	for _, it := range in.TransactItems {
		var (
			table string
			key   json.RawMessage
			ok    = true
		)
		switch {
		case it.Put != nil:
			table = it.Put.TableName
			key, ok = h.keyOf(table, it.Put.Item)
		case it.Update != nil:
			table, key = it.Update.TableName, it.Update.Key
		case it.Delete != nil:
			table, key = it.Delete.TableName, it.Delete.Key
		default:
			continue
		}
		if !ok {
			return h.forward(ctx, "TransactWriteItems", body)
		}
		img, ok := h.getImage(ctx, table, key)
		if !ok {
			return h.forward(ctx, "TransactWriteItems", body)
		}
		before = append(before, img)
	}

	resp := h.forward(ctx, "TransactWriteItems", body)
	if resp.status != http.StatusOK {
		return resp
	}
	reasons := make([]map[string]string, len(in.TransactItems))
	tooLarge := false
	for i, it := range in.TransactItems {
		reasons[i] = map[string]string{"Code": "None"}
		if it.Update == nil {
			continue
		}
		after, ok := h.getImage(ctx, it.Update.TableName, it.Update.Key)
		if ok && ItemSize(after.item) > MaxItemSize {
			reasons[i] = map[string]string{"Code": "ValidationError", "Message": UpdateItemTooLargeMessage}
			tooLarge = true
		}
	}
	if !tooLarge {
		return resp
	}
	for _, img := range before {
		h.restore(ctx, img)
	}
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = r["Code"]
	}
	b, _ := json.Marshal(map[string]any{
		"__type":              dynamoErrPrefix + "TransactionCanceledException",
		"Message":             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]",
		"CancellationReasons": reasons,
	})
	return dynamoResponse{status: http.StatusBadRequest, body: b}
}
