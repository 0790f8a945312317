package functions_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// call is one outside call a function made on its first invocation: an
// AWS operation on a table, queue or function, or its request to the
// subscriber.
type call struct {
	Service, Op, Target string
}

func (c call) String() string { return c.Service + "." + c.Op + " " + c.Target }

// recorder sits in front of an emulator and notes every AWS call that
// passes (its X-Amz-Target operation and the table or queue it names).
type recorder struct {
	service string
	url     string

	mu    sync.Mutex
	calls []call
}

func newRecorder(tb testing.TB, service, upstream string) *recorder {
	tb.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		tb.Fatal(err)
	}
	r := &recorder{service: service}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		target := req.Header.Get("X-Amz-Target")
		if i := strings.LastIndexByte(target, '.'); i >= 0 {
			r.mu.Lock()
			r.calls = append(r.calls, call{Service: service, Op: target[i+1:], Target: namedIn(body)})
			r.mu.Unlock()
		}
		proxy.ServeHTTP(w, req)
	}))
	tb.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// namedIn is the table or queue a DynamoDB or SQS JSON request names (a
// transaction's first item's table).
func namedIn(body []byte) string {
	var req struct {
		TableName     string
		QueueUrl      string
		TransactItems []map[string]struct{ TableName string }
	}
	_ = json.Unmarshal(body, &req)
	switch {
	case req.TableName != "":
		return req.TableName
	case req.QueueUrl != "":
		return req.QueueUrl
	}
	for _, it := range req.TransactItems {
		for _, v := range it {
			return v.TableName
		}
	}
	return ""
}

// take returns the calls recorded since the last take.
func (r *recorder) take() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// floorKeys are the key attributes of every table the floors write to:
// each table of the platform keys its items by pk and sk (internal/aws/
// table).
const floorKeys = `map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: key}, "sk": &ddbtypes.AttributeValueMemberS{Value: "floor"}}`

// floorCall is the Go statement a floor makes for one recorded call: the
// same operation with the same client on the same table, queue or
// function, with the smallest valid input.
func floorCall(c call) (string, error) {
	q := fmt.Sprintf("%q", c.Target)
	switch c.Service + "." + c.Op {
	case "dynamodb.TransactWriteItems":
		return `_, err = cdynamodb.TransactWriteItems(ctx, &svcdynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{{Put: &ddbtypes.Put{TableName: aws.String(` + q + `), Item: ` + floorKeys + `}}}})`, nil
	case "dynamodb.PutItem":
		return `_, err = cdynamodb.PutItem(ctx, &svcdynamodb.PutItemInput{TableName: aws.String(` + q + `), Item: ` + floorKeys + `})`, nil
	case "dynamodb.UpdateItem":
		return `_, err = cdynamodb.UpdateItem(ctx, &svcdynamodb.UpdateItemInput{TableName: aws.String(` + q + `), Key: ` + floorKeys + `, UpdateExpression: aws.String("SET n = :n"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":n": &ddbtypes.AttributeValueMemberN{Value: "1"}}})`, nil
	case "dynamodb.GetItem":
		return `_, err = cdynamodb.GetItem(ctx, &svcdynamodb.GetItemInput{TableName: aws.String(` + q + `), Key: ` + floorKeys + `})`, nil
	case "dynamodb.Query":
		return `_, err = cdynamodb.Query(ctx, &svcdynamodb.QueryInput{TableName: aws.String(` + q + `), KeyConditionExpression: aws.String("pk = :k"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":k": &ddbtypes.AttributeValueMemberS{Value: key}}})`, nil
	case "sqs.SendMessage":
		fifo := ""
		if strings.HasSuffix(c.Target, ".fifo") {
			fifo = `, MessageGroupId: aws.String(key), MessageDeduplicationId: aws.String(key)`
		}
		return `_, err = csqs.SendMessage(ctx, &svcsqs.SendMessageInput{QueueUrl: aws.String(` + q + `), MessageBody: aws.String("{}")` + fifo + `})`, nil
	case "lambda.Invoke":
		return `_, err = clambda.Invoke(ctx, &svclambda.InvokeInput{FunctionName: aws.String(` + q + `), Payload: []byte("{}")})`, nil
	case "http.POST":
		return `err = post(ctx, ` + q + `)`, nil
	}
	return "", fmt.Errorf("the floor makes no %s: add it to floorCall", c)
}

// floorSource is the smallest Lambda linking the same AWS clients as a
// function and, on each invocation, making the calls it made (none when
// calls is empty): what the function would weigh, take to start and take
// to answer its first event with nothing of ours in it.
func floorSource(svcs []string, calls []call) (string, error) {
	var imports, clients, body strings.Builder
	uses := map[string]bool{}
	for _, s := range svcs {
		fmt.Fprintf(&imports, "\tsvc%s %q\n", s, service+s)
		fmt.Fprintf(&clients, "\tc%s = svc%s.NewFromConfig(cfg)\n", s, s)
	}
	for _, c := range calls {
		stmt, err := floorCall(c)
		if err != nil {
			return "", err
		}
		uses[c.Service] = true
		fmt.Fprintf(&body, "\t\t%s\n\t\tif err != nil {\n\t\t\treturn nil, err\n\t\t}\n", stmt)
	}
	var vars strings.Builder
	for _, s := range svcs {
		fmt.Fprintf(&vars, "\tc%s *svc%s.Client\n", s, s)
	}
	extra := ""
	if uses["dynamodb"] {
		extra += "\tddbtypes \"github.com/aws/aws-sdk-go-v2/service/dynamodb/types\"\n"
	}
	post := ""
	if uses["http"] {
		extra += "\t\"net/http\"\n\t\"strings\"\n"
		post = `
// post is the consumer's request to its subscriber.
func post(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
`
	}
	if len(calls) > 0 {
		extra += "\t\"fmt\"\n\t\"os\"\n\n\t\"github.com/aws/aws-sdk-go-v2/aws\"\n"
	}
	key := ""
	if len(calls) > 0 {
		key = "\t\tn++\n\t\tkey := fmt.Sprintf(\"floor-%d-%d\", os.Getpid(), n)\n\t\t_ = key\n\t\tvar err error\n"
	}
	return `package main

import (
	"context"
	"encoding/json"
` + extra + `
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
` + imports.String() + `)

var (
` + vars.String() + `	n int
)
` + post + `
func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
` + clients.String() + `	lambda.Start(func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
` + key + body.String() + `		return in, nil
	})
}
`, nil
}
