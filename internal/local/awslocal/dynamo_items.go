package awslocal

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
)

// This file holds the item-level fixes of DynamoHandler: the 400 KB limit
// and top-level REMOVE. They run with the handler's mutex held, so an
// update can be applied, completed, measured and rolled back without anyone
// seeing an intermediate state.

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

// replace writes item in place of the one at key. A put moves the item's
// index entries too (patched minidyn: third_party/minidyn/PATCHES.md).
func (h *DynamoHandler) replace(ctx context.Context, table string, _ json.RawMessage, item any) {
	h.call(ctx, "PutItem", map[string]any{"TableName": table, "Item": item})
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

// updateItem applies the update, completes a top-level REMOVE minidyn
// ignored, then measures the resulting item and restores the previous
// image if it is over the limit. DynamoDB computes the new item before
// writing; with requests serialised the observable effect is the same.
func (h *DynamoHandler) updateItem(ctx context.Context, body []byte) dynamoResponse {
	var in struct {
		TableName                string
		Key                      json.RawMessage
		UpdateExpression         string
		ExpressionAttributeNames map[string]string
		ReturnValues             string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return h.forward(ctx, "UpdateItem", body)
	}
	removes := resolveNames(topLevelRemoves(in.UpdateExpression), in.ExpressionAttributeNames)
	before, ok := h.getImage(ctx, in.TableName, in.Key)
	resp := h.forward(ctx, "UpdateItem", body)
	if resp.status != http.StatusOK || !ok {
		return resp
	}
	after, ok := h.getImage(ctx, in.TableName, in.Key)
	if ok && len(removes) > 0 {
		h.removeAttributes(ctx, after, removes)
		resp = withoutReturned(resp, in.ReturnValues, removes)
	}
	if ok && ItemSize(after.item) > MaxItemSize {
		h.restore(ctx, before)
		return validationError(UpdateItemTooLargeMessage)
	}
	return resp
}

// resolveNames maps "#name" placeholders to the attribute names they
// stand for.
func resolveNames(paths []string, names map[string]string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if n, ok := names[p]; ok && strings.HasPrefix(p, "#") {
			p = n
		}
		out = append(out, p)
	}
	return out
}

// removeAttributes does what minidyn leaves undone of a top-level REMOVE:
// it drops the attributes from the item as updated and writes it back, so
// the item also leaves every index keyed on them (the sparse-index move
// DynamoDB makes). img is updated to the item as written.
func (h *DynamoHandler) removeAttributes(ctx context.Context, img image, attrs []string) {
	if img.item == nil {
		return
	}
	changed := false
	for _, a := range attrs {
		if _, ok := img.item[a]; ok {
			delete(img.item, a)
			changed = true
		}
	}
	if changed {
		h.replace(ctx, img.table, img.key, img.item)
	}
}

// withoutReturned drops removed attributes from the new values an update
// returns (ReturnValues ALL_NEW or UPDATED_NEW): minidyn reports them as
// still there.
func withoutReturned(resp dynamoResponse, returnValues string, attrs []string) dynamoResponse {
	if returnValues != "ALL_NEW" && returnValues != "UPDATED_NEW" {
		return resp
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(resp.body, &out); err != nil {
		return resp
	}
	var values map[string]json.RawMessage
	if err := json.Unmarshal(out["Attributes"], &values); err != nil || values == nil {
		return resp
	}
	for _, a := range attrs {
		delete(values, a)
	}
	b, err := json.Marshal(values)
	if err != nil {
		return resp
	}
	out["Attributes"] = b
	if b, err = json.Marshal(out); err == nil {
		resp.body = b
	}
	return resp
}

type transactItem struct {
	Put *struct {
		TableName string
		Item      json.RawMessage
	}
	Update *struct {
		TableName                string
		Key                      json.RawMessage
		UpdateExpression         string
		ExpressionAttributeNames map[string]string
	}
	Delete *struct {
		TableName string
		Key       json.RawMessage
	}
}

// transactWriteItems validates Puts up front (DynamoDB rejects an oversized
// Put as a ValidationException on the whole request), completes the
// top-level REMOVEs of its Updates (see removeAttributes) and checks Updates
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
		if removes := resolveNames(topLevelRemoves(it.Update.UpdateExpression), it.Update.ExpressionAttributeNames); ok && len(removes) > 0 {
			h.removeAttributes(ctx, after, removes)
		}
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

// query resumes an index query from where DynamoDB would. DynamoDB reads
// ExclusiveStartKey as a position in the index, whether or not an item is
// still there; minidyn looks the item up in the index and, when it has
// left it meanwhile (a sparse index: the sweeper moves the rows it pages
// through out of it), returns an empty page without a next key, so the
// rest of the partition is silently skipped. When the start item is not
// where its key says, a placeholder with exactly the key's attributes
// stands there for the query, and the item is put back as it was.
func (h *DynamoHandler) query(ctx context.Context, body []byte) dynamoResponse {
	var in struct {
		TableName         string
		IndexName         string
		ExclusiveStartKey map[string]any
	}
	if err := json.Unmarshal(body, &in); err != nil || in.IndexName == "" || len(in.ExclusiveStartKey) == 0 {
		return h.forward(ctx, "Query", body)
	}
	esk, err := json.Marshal(in.ExclusiveStartKey)
	if err != nil {
		return h.forward(ctx, "Query", body)
	}
	key, ok := h.keyOf(in.TableName, esk)
	if !ok {
		return h.forward(ctx, "Query", body)
	}
	cur, ok := h.getImage(ctx, in.TableName, key)
	if !ok {
		return h.forward(ctx, "Query", body)
	}
	inPlace := cur.item != nil
	for name, v := range in.ExclusiveStartKey {
		if !inPlace {
			break
		}
		inPlace = reflect.DeepEqual(cur.item[name], v)
	}
	if inPlace {
		return h.forward(ctx, "Query", body)
	}
	h.replace(ctx, in.TableName, key, in.ExclusiveStartKey)
	resp := h.forward(ctx, "Query", body)
	if cur.raw == nil {
		h.call(ctx, "DeleteItem", map[string]any{"TableName": in.TableName, "Key": key})
	} else {
		h.replace(ctx, in.TableName, key, cur.raw)
	}
	return resp
}
