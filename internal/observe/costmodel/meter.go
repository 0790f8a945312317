package costmodel

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/siteswarm/eventplatform/internal/aws/table"
)

// Meter measures the billed units of the SDK calls of the clients it is
// attached to (APIOption), and the Lambda, API Gateway and log usage the
// caller reports. DynamoDB writes are priced from the item before and
// after the call (read with Peek, a client without the meter): the table
// write is the larger of the two sizes, and each global secondary index is
// written when the item enters, leaves or changes in it — twice (delete +
// put) when its index key changes. Transactional writes and reads count
// double on the table. Calls are meant to run one path at a time: a
// concurrent write to the same item would blur the before and after.
type Meter struct {
	Peek   *dynamodb.Client
	tables map[string]table.Def

	mu    sync.Mutex
	u     Units
	calls map[string]int
	wru   map[string]float64 // by "Service.Operation"
	// invs are the invocations since Reset (Begin) and callees the ones a
	// traced Lambda Invoke started, by its token; nextInv numbers them
	// over the meter's life (a CPU profile of a whole run names them).
	invs    []*invocation
	callees map[string]*invocation
	nextInv int
	// written are the items written since Reset, by table and key (what
	// Stored reads back).
	written map[string]map[string]map[string]ddbtypes.AttributeValue
}

// NewMeter meters calls on the tables of a stage with resource prefix
// prefix.
func NewMeter(peek *dynamodb.Client, prefix string) *Meter {
	m := &Meter{Peek: peek, tables: map[string]table.Def{}, calls: map[string]int{}, wru: map[string]float64{},
		callees: map[string]*invocation{}, written: map[string]map[string]map[string]ddbtypes.AttributeValue{}}
	for _, d := range table.All() {
		m.tables[d.PhysicalName(prefix)] = d
	}
	return m
}

// Reset zeroes the meter.
func (m *Meter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.u, m.calls, m.wru = Units{}, map[string]int{}, map[string]float64{}
	m.invs, m.callees = nil, map[string]*invocation{}
	m.written = map[string]map[string]map[string]ddbtypes.AttributeValue{}
}

// WRUByOperation is the DynamoDB write units since the last Reset, by
// "DynamoDB.Operation".
func (m *Meter) WRUByOperation() map[string]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]float64, len(m.wru))
	for k, v := range m.wru {
		out[k] = v
	}
	return out
}

// Snapshot is what was measured since the last Reset: the units, and the
// requests per "Service.Operation".
func (m *Meter) Snapshot() (Units, map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	calls := make(map[string]int, len(m.calls))
	for k, v := range m.calls {
		calls[k] = v
	}
	return m.u, calls
}

func (m *Meter) add(u Units) {
	m.mu.Lock()
	m.u.Add(u)
	m.mu.Unlock()
}

// APIRequest records one API Gateway request of size bytes.
func (m *Meter) APIRequest(size int) { m.add(Units{APIRequests: APIRequestUnits(size)}) }

// LogBytes records n bytes written to CloudWatch Logs.
func (m *Meter) LogBytes(n int) { m.add(Units{LogBytes: float64(n)}) }

// Traces records n traces (a sampled fraction per event).
func (m *Meter) Traces(n float64) { m.add(Units{Traces: n}) }

// APIOption is the middleware to add to a client's APIOptions.
func (m *Meter) APIOption(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("costmodel.Meter", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		op := middleware.GetServiceID(ctx) + "." + middleware.GetOperationName(ctx)
		params, traced := m.trace(ctx, op, in.Parameters)
		in.Parameters = params
		defer traced()
		count := func() {
			m.mu.Lock()
			m.calls[op]++
			m.mu.Unlock()
		}
		if middleware.GetServiceID(ctx) == "DynamoDB" {
			count()
			return m.dynamo(ctx, op, in, next)
		}
		out, md, err := next.HandleInitialize(ctx, in)
		if r, ok := out.Result.(*sqs.ReceiveMessageOutput); ok && len(r.Messages) == 0 {
			// An empty poll: event source mappings poll every queue all
			// the time, a cost per queue and hour, not per event.
			return out, md, err
		}
		count()
		m.add(callUnits(in.Parameters, out.Result))
		return out, md, err
	}), middleware.After)
}

// callUnits prices a call of a service billed per request: requestUnits,
// with a FIFO queue's requests as SQSFIFORequests (SQS names every FIFO
// queue <name>.fifo).
func callUnits(in, out any) Units {
	u := requestUnits(in, out)
	if strings.HasSuffix(queueURL(in), ".fifo") {
		u.SQSFIFORequests, u.SQSRequests = u.SQSRequests, 0
	}
	return u
}

// requestUnits prices a call of a service billed per request.
func requestUnits(in, out any) Units {
	switch in := in.(type) {
	case *sqs.SendMessageInput:
		return Units{SQSRequests: chunks64K(len(aws.ToString(in.MessageBody)) + attrsSize(in.MessageAttributes))}
	case *sqs.SendMessageBatchInput:
		n := 0
		for _, e := range in.Entries {
			n += len(aws.ToString(e.MessageBody)) + attrsSize(e.MessageAttributes)
		}
		return Units{SQSRequests: chunks64K(n)}
	case *sqs.ReceiveMessageInput:
		n := 0
		if o, ok := out.(*sqs.ReceiveMessageOutput); ok {
			for _, msg := range o.Messages {
				n += len(aws.ToString(msg.Body)) + attrsSize(msg.MessageAttributes)
			}
		}
		return Units{SQSRequests: chunks64K(n)}
	case *sns.PublishInput:
		return Units{SNSRequests: chunks64K(len(aws.ToString(in.Message)))}
	}
	switch reflect.TypeOf(in).String() {
	case "*sqs.DeleteMessageInput", "*sqs.DeleteMessageBatchInput", "*sqs.ChangeMessageVisibilityInput",
		"*sqs.ChangeMessageVisibilityBatchInput", "*sqs.GetQueueAttributesInput", "*sqs.GetQueueUrlInput":
		return Units{SQSRequests: 1}
	case "*s3.PutObjectInput", "*s3.CopyObjectInput", "*s3.ListObjectsV2Input", "*s3.ListObjectVersionsInput", "*s3.CreateMultipartUploadInput", "*s3.UploadPartInput", "*s3.CompleteMultipartUploadInput":
		return Units{S3Tier1: 1}
	case "*s3.GetObjectInput", "*s3.HeadObjectInput":
		return Units{S3Tier2: 1}
	case "*secretsmanager.GetSecretValueInput":
		return Units{SecretsRequests: 1}
	}
	// Lambda invocations are billed where they run (Invocation); deletes
	// in S3 and control-plane calls are free.
	return Units{}
}

// queueURL is the queue an SQS call is about ("" for any other call).
func queueURL(in any) string {
	switch in := in.(type) {
	case *sqs.SendMessageInput:
		return aws.ToString(in.QueueUrl)
	case *sqs.SendMessageBatchInput:
		return aws.ToString(in.QueueUrl)
	case *sqs.ReceiveMessageInput:
		return aws.ToString(in.QueueUrl)
	case *sqs.DeleteMessageInput:
		return aws.ToString(in.QueueUrl)
	case *sqs.DeleteMessageBatchInput:
		return aws.ToString(in.QueueUrl)
	case *sqs.ChangeMessageVisibilityInput:
		return aws.ToString(in.QueueUrl)
	case *sqs.ChangeMessageVisibilityBatchInput:
		return aws.ToString(in.QueueUrl)
	case *sqs.GetQueueAttributesInput:
		return aws.ToString(in.QueueUrl)
	}
	return ""
}

func attrsSize(attrs map[string]sqstypes.MessageAttributeValue) int {
	n := 0
	for k, v := range attrs {
		n += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
	}
	return n
}

// write is one item written: its table, its key, and the item before.
type write struct {
	def   table.Def
	tbl   string
	key   map[string]ddbtypes.AttributeValue
	old   map[string]ddbtypes.AttributeValue
	check bool // a transaction's ConditionCheck: read for the condition, not written
	// refused: a batch's statement that failed (its condition): billed
	// like a refused write.
	refused bool
}

func (m *Meter) dynamo(ctx context.Context, op string, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	var (
		writes []write
		factor = 1.0
		stmtOf []int // a batch's writes: the statement of each
	)
	plan := func(tbl string, key map[string]ddbtypes.AttributeValue, item map[string]ddbtypes.AttributeValue, check bool) {
		def, ok := m.tables[tbl]
		if !ok {
			return
		}
		if key == nil {
			key = keyOf(def, item)
		}
		var old map[string]ddbtypes.AttributeValue
		metering(ctx, func() { old = m.peek(ctx, tbl, key) })
		writes = append(writes, write{def: def, tbl: tbl, key: key, old: old, check: check})
	}
	switch p := in.Parameters.(type) {
	case *dynamodb.PutItemInput:
		plan(aws.ToString(p.TableName), nil, p.Item, false)
	case *dynamodb.UpdateItemInput:
		plan(aws.ToString(p.TableName), p.Key, nil, false)
	case *dynamodb.DeleteItemInput:
		plan(aws.ToString(p.TableName), p.Key, nil, false)
	case *dynamodb.BatchWriteItemInput:
		for tbl, reqs := range p.RequestItems {
			for _, r := range reqs {
				switch {
				case r.PutRequest != nil:
					plan(tbl, nil, r.PutRequest.Item, false)
				case r.DeleteRequest != nil:
					plan(tbl, r.DeleteRequest.Key, nil, false)
				}
			}
		}
	case *dynamodb.TransactWriteItemsInput:
		factor = 2
		for _, it := range p.TransactItems {
			switch {
			case it.Put != nil:
				plan(aws.ToString(it.Put.TableName), nil, it.Put.Item, false)
			case it.Update != nil:
				plan(aws.ToString(it.Update.TableName), it.Update.Key, nil, false)
			case it.Delete != nil:
				plan(aws.ToString(it.Delete.TableName), it.Delete.Key, nil, false)
			case it.ConditionCheck != nil:
				plan(aws.ToString(it.ConditionCheck.TableName), it.ConditionCheck.Key, nil, true)
			}
		}
	case *dynamodb.BatchExecuteStatementInput:
		// Each write statement is billed as its single-item write.
		for i, st := range p.Statements {
			if tbl, key, ok := m.statementKey(aws.ToString(st.Statement), st.Parameters); ok {
				plan(tbl, key, nil, false)
				stmtOf = append(stmtOf, i)
			}
		}
	}
	out, md, err := next.HandleInitialize(ctx, in)
	if o, ok := out.Result.(*dynamodb.BatchExecuteStatementOutput); ok && err == nil {
		for j, i := range stmtOf {
			if i < len(o.Responses) && o.Responses[i].Error != nil {
				writes[j].refused = true
			}
		}
	}
	metering(ctx, func() { m.priceWrites(ctx, op, writes, factor, in.Parameters, out.Result, err) })
	return out, md, err
}

// priceWrites adds the units of a DynamoDB call's writes (read after it)
// and reads.
func (m *Meter) priceWrites(ctx context.Context, op string, writes []write, factor float64, params, result any, err error) {
	var u Units
	if _, batch := params.(*dynamodb.BatchExecuteStatementInput); batch && err != nil {
		// A batch that failed whole ran none of its statements (AWS bills
		// each statement it runs, refused or not, and a throttled request
		// none). The embedded emulator, which has no PartiQL, fails every
		// one: the callers' per-row fallback writes are billed instead,
		// the same units as the statements would have been on AWS.
		writes = nil
	}
	for _, w := range writes {
		if w.check || w.refused || err != nil {
			// A condition check, or a refused write: the item is read
			// for the condition and billed as a write of its size.
			u.WRU += factor * writeUnits(ItemSize(w.old))
			continue
		}
		now := m.peek(ctx, w.tbl, w.key)
		m.noteWritten(w.tbl, w.key)
		u.WRU += factor * writeUnits(max(ItemSize(w.old), ItemSize(now)))
		ix := indexWrites(w.def, w.old, now)
		u.WRU += ix
		u.WRUIndex += ix
	}
	u.RRU += readUnitsOf(params, result)
	m.add(u)
	if u.WRU > 0 {
		m.mu.Lock()
		m.wru[op] += u.WRU
		m.mu.Unlock()
	}
}

// readUnitsOf prices a read from what it returned.
func readUnitsOf(in, out any) float64 {
	half := func(consistent *bool) float64 {
		if aws.ToBool(consistent) {
			return 1
		}
		return 0.5
	}
	switch p := in.(type) {
	case *dynamodb.GetItemInput:
		o, _ := out.(*dynamodb.GetItemOutput)
		size := 0
		if o != nil {
			size = ItemSize(o.Item)
		}
		return half(p.ConsistentRead) * readUnits(size)
	case *dynamodb.QueryInput:
		o, _ := out.(*dynamodb.QueryOutput)
		if o == nil {
			return 0
		}
		return half(p.ConsistentRead) * readUnits(itemsSize(o.Items))
	case *dynamodb.ScanInput:
		o, _ := out.(*dynamodb.ScanOutput)
		if o == nil {
			return 0
		}
		return half(p.ConsistentRead) * readUnits(itemsSize(o.Items))
	case *dynamodb.BatchGetItemInput:
		o, _ := out.(*dynamodb.BatchGetItemOutput)
		if o == nil {
			return 0
		}
		total := 0.0
		for tbl, items := range o.Responses {
			for _, it := range items {
				total += half(p.RequestItems[tbl].ConsistentRead) * readUnits(ItemSize(it))
			}
		}
		return total
	case *dynamodb.TransactGetItemsInput:
		o, _ := out.(*dynamodb.TransactGetItemsOutput)
		if o == nil {
			return 0
		}
		total := 0.0
		for _, r := range o.Responses {
			total += 2 * readUnits(ItemSize(r.Item))
		}
		return total
	}
	return 0
}

func itemsSize(items []map[string]ddbtypes.AttributeValue) int {
	n := 0
	for _, it := range items {
		n += ItemSize(it)
	}
	return n
}

// peek reads an item as it is now (nil when absent or unreadable).
func (m *Meter) peek(ctx context.Context, tbl string, key map[string]ddbtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
	if m.Peek == nil || key == nil {
		return nil
	}
	o, err := m.Peek.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil
	}
	return o.Item
}

func keyOf(def table.Def, item map[string]ddbtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
	k := map[string]ddbtypes.AttributeValue{}
	if v, ok := item[def.PK.Name]; ok {
		k[def.PK.Name] = v
	}
	if def.SK != nil {
		if v, ok := item[def.SK.Name]; ok {
			k[def.SK.Name] = v
		}
	}
	return k
}

// indexWrites are the index write units of an item going from old to new
// (nil: absent).
func indexWrites(def table.Def, old, now map[string]ddbtypes.AttributeValue) float64 {
	total := 0.0
	for _, ix := range def.Indexes {
		inOld, inNew := inIndex(ix, old), inIndex(ix, now)
		po, pn := project(def, ix, old), project(def, ix, now)
		switch {
		case inOld && inNew && sameIndexKey(ix, old, now):
			if !reflect.DeepEqual(po, pn) {
				total += writeUnits(max(ItemSize(po), ItemSize(pn)))
			}
		case inOld && inNew: // the index key changed: delete + put
			total += writeUnits(ItemSize(po)) + writeUnits(ItemSize(pn))
		case inOld:
			total += writeUnits(ItemSize(po))
		case inNew:
			total += writeUnits(ItemSize(pn))
		}
	}
	return total
}

func inIndex(ix table.Index, item map[string]ddbtypes.AttributeValue) bool {
	if item == nil {
		return false
	}
	if _, ok := item[ix.PK.Name]; !ok {
		return false
	}
	if ix.SK != nil {
		if _, ok := item[ix.SK.Name]; !ok {
			return false
		}
	}
	return true
}

func sameIndexKey(ix table.Index, a, b map[string]ddbtypes.AttributeValue) bool {
	if !reflect.DeepEqual(a[ix.PK.Name], b[ix.PK.Name]) {
		return false
	}
	return ix.SK == nil || reflect.DeepEqual(a[ix.SK.Name], b[ix.SK.Name])
}

// project is an item as the index stores it.
func project(def table.Def, ix table.Index, item map[string]ddbtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
	if item == nil {
		return nil
	}
	if ix.Projection == table.ProjectAll {
		return item
	}
	names := []string{def.PK.Name, ix.PK.Name}
	if def.SK != nil {
		names = append(names, def.SK.Name)
	}
	if ix.SK != nil {
		names = append(names, ix.SK.Name)
	}
	if ix.Projection == table.ProjectInclude {
		names = append(names, ix.NonKey...)
	}
	p := map[string]ddbtypes.AttributeValue{}
	for _, n := range names {
		if v, ok := item[n]; ok {
			p[n] = v
		}
	}
	return p
}

// RoleOf is the function role a local function name runs
// ("consumer-http-billing-events" → "consumer-http").
func RoleOf(function string) string {
	for _, prefix := range []string{"consumer-http", "consumer-archive", "consumer-purge"} {
		if strings.HasPrefix(function, prefix+"-") {
			return prefix
		}
	}
	return function
}

// MemoryMB is each function role's configured memory, as the CDK app
// deploys it (a CDK test keeps the two equal): every webhook provider's
// function (webhook-<provider>) has one.
var MemoryMB = map[string]int{
	"ingest": 512, "webhook-stripe": 256, "webhook-github": 256, "webhook-shopify": 256, "webhook-standard": 256, "consumer-http": 256, "consumer-archive": 256, "consumer-purge": 256,
	"sweeper": 512, "dlq-archiver": 256, "replay": 512, "admin-api": 256, "purge-api": 256,
	"jobs-worker": 512, "jobs-sweep": 256, "import-trigger": 256, "subscriber-health": 128, "stripe-eventbridge": 256,
}

// statementKey is the table and key a PartiQL write statement (UPDATE or
// DELETE) names with parameters in its WHERE clause ("pk" = ? AND "sk" =
// ?, as internal/aws/dynamo writes them), or false: a read, a table the
// meter does not know, a key given as a literal.
func (m *Meter) statementKey(stmt string, params []ddbtypes.AttributeValue) (string, map[string]ddbtypes.AttributeValue, bool) {
	rest, ok := cutPrefixFold(strings.TrimSpace(stmt), "UPDATE ")
	if !ok {
		if rest, ok = cutPrefixFold(strings.TrimSpace(stmt), "DELETE FROM "); !ok {
			return "", nil, false
		}
	}
	rest = strings.TrimSpace(rest)
	var tbl string
	if strings.HasPrefix(rest, `"`) {
		end := strings.Index(rest[1:], `"`)
		if end < 0 {
			return "", nil, false
		}
		tbl = rest[1 : 1+end]
	} else {
		tbl, _, _ = strings.Cut(rest, " ")
	}
	def, ok := m.tables[tbl]
	if !ok {
		return "", nil, false
	}
	where := strings.LastIndex(strings.ToUpper(stmt), " WHERE ")
	if where < 0 {
		return "", nil, false
	}
	names := []string{def.PK.Name}
	if def.SK != nil {
		names = append(names, def.SK.Name)
	}
	key := map[string]ddbtypes.AttributeValue{}
	for _, name := range names {
		at := -1
		for _, form := range []string{`"` + name + `" = ?`, name + ` = ?`} {
			if i := strings.Index(stmt[where:], form); i >= 0 {
				at = where + i + len(form) - 1
				break
			}
		}
		if at < 0 {
			return "", nil, false
		}
		n := strings.Count(stmt[:at], "?")
		if n >= len(params) {
			return "", nil, false
		}
		key[name] = params[n]
	}
	return tbl, key, true
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// noteWritten remembers an item written (Stored reads it back).
func (m *Meter) noteWritten(tbl string, key map[string]ddbtypes.AttributeValue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.written[tbl] == nil {
		m.written[tbl] = map[string]map[string]ddbtypes.AttributeValue{}
	}
	m.written[tbl][fmt.Sprint(plainKey(key))] = key
}

func plainKey(key map[string]ddbtypes.AttributeValue) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(key)) {
		switch v := key[k].(type) {
		case *ddbtypes.AttributeValueMemberS:
			out = append(out, k+"="+v.Value)
		case *ddbtypes.AttributeValueMemberN:
			out = append(out, k+"="+v.Value)
		default:
			out = append(out, fmt.Sprintf("%s=%v", k, v))
		}
	}
	return out
}

// itemOverhead is what DynamoDB adds to every item it stores, in the
// table and in each index, for its storage bill.
const itemOverhead = 100

// Stored is the storage, in bytes by table, of the items written since
// Reset as they are now (an item deleted since is none): each item's size
// and, for every index it is in, its projection's, each with DynamoDB's
// 100 bytes of overhead.
func (m *Meter) Stored(ctx context.Context) map[string]float64 {
	m.mu.Lock()
	written := map[string][]map[string]ddbtypes.AttributeValue{}
	for tbl, keys := range m.written {
		for _, k := range keys {
			written[tbl] = append(written[tbl], k)
		}
	}
	m.mu.Unlock()
	out := map[string]float64{}
	for tbl, keys := range written {
		def := m.tables[tbl]
		for _, k := range keys {
			item := m.peek(ctx, tbl, k)
			if item == nil {
				continue
			}
			out[def.Name] += float64(ItemSize(item) + itemOverhead)
			for _, ix := range def.Indexes {
				if inIndex(ix, item) {
					out[def.Name] += float64(ItemSize(project(def, ix, item)) + itemOverhead)
				}
			}
		}
	}
	return out
}

// StorageGBMonths prices stored bytes by table (Stored) for as long as
// each table keeps its items: keptDays by table name (table.Def.Name).
func StorageGBMonths(stored map[string]float64, keptDays map[string]float64) float64 {
	total := 0.0
	for tbl, b := range stored {
		total += b / (1 << 30) * keptDays[tbl] / daysPerMonth
	}
	return total
}

// daysPerMonth is AWS's month for storage bills (730 hours).
const daysPerMonth = 730.0 / 24
