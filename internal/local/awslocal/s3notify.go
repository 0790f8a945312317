package awslocal

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// S3Notifications adds S3 event notifications to SQS to the S3 emulator
// (gofakes3 has none): PutBucketNotificationConfiguration (and its Get)
// with QueueConfigurations — events s3:ObjectCreated:* (or one of them),
// key prefix/suffix filter rules — and, for every object a PutObject,
// CopyObject or CompleteMultipartUpload creates, the message S3 sends
// (event version 2.1, the key URL-encoded, size, ETag, version id,
// sequencer) to each matching queue, before the request answers. Like S3,
// a new configuration sends each queue an s3:TestEvent.
type S3Notifications struct {
	next http.Handler

	mu      sync.Mutex
	configs map[string][]queueRule // bucket → rules
	sqs     *sqs.Client
	seq     atomic.Int64
	// Failed counts notifications that could not be sent.
	Failed atomic.Int64
}

type queueRule struct {
	ARN            string
	Events         []string
	Prefix, Suffix string
}

// notificationConfiguration is the S3 XML document (QueueConfigurations
// only; topic and Lambda targets are refused).
type notificationConfiguration struct {
	XMLName xml.Name `xml:"NotificationConfiguration"`
	Queues  []struct {
		ID     string   `xml:"Id,omitempty"`
		Queue  string   `xml:"Queue"`
		Events []string `xml:"Event"`
		Filter *struct {
			Rules []struct {
				Name  string `xml:"Name"`
				Value string `xml:"Value"`
			} `xml:"S3Key>FilterRule"`
		} `xml:"Filter,omitempty"`
	} `xml:"QueueConfiguration"`
	Topics  []struct{} `xml:"TopicConfiguration"`
	Lambdas []struct{} `xml:"CloudFunctionConfiguration"`
}

// NewS3Notifications wraps an S3 handler.
func NewS3Notifications(next http.Handler) *S3Notifications {
	return &S3Notifications{next: next, configs: map[string][]queueRule{}}
}

// SendThrough sets the SQS client notifications are sent with (the SQS
// emulator starts after S3).
func (n *S3Notifications) SendThrough(c *sqs.Client) {
	n.mu.Lock()
	n.sqs = c
	n.mu.Unlock()
}

func (n *S3Notifications) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bucket, key := splitS3Path(r.URL.EscapedPath()) // key stays URL-escaped
	q := r.URL.Query()
	if _, ok := q["notification"]; ok && key == "" {
		n.serveConfig(w, r, bucket)
		return
	}
	event := ""
	switch {
	case r.Method == http.MethodPut && key != "" && !q.Has("uploadId") && !q.Has("tagging") && !q.Has("acl"):
		event = "ObjectCreated:Put"
		if r.Header.Get("X-Amz-Copy-Source") != "" {
			event = "ObjectCreated:Copy"
		}
	case r.Method == http.MethodPost && key != "" && q.Has("uploadId"):
		event = "ObjectCreated:CompleteMultipartUpload"
	}
	if event == "" || !n.watched(bucket) {
		n.next.ServeHTTP(w, r)
		return
	}
	rec := &statusRecorder{ResponseWriter: w}
	n.next.ServeHTTP(rec, r)
	if rec.status == 0 || rec.status/100 == 2 { // nothing written is a 200
		n.notify(r.Context(), bucket, key, event, rec.Header().Get("X-Amz-Version-Id"))
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func splitS3Path(p string) (bucket, key string) {
	p = strings.TrimPrefix(p, "/")
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key
}

func (n *S3Notifications) watched(bucket string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.configs[bucket]) > 0
}

func (n *S3Notifications) serveConfig(w http.ResponseWriter, r *http.Request, bucket string) {
	switch r.Method {
	case http.MethodGet:
		n.mu.Lock()
		rules := n.configs[bucket]
		n.mu.Unlock()
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><NotificationConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
		for _, rl := range rules {
			b.WriteString("<QueueConfiguration><Queue>" + xmlText(rl.ARN) + "</Queue>")
			for _, e := range rl.Events {
				b.WriteString("<Event>" + xmlText(e) + "</Event>")
			}
			b.WriteString("<Filter><S3Key>")
			if rl.Prefix != "" {
				b.WriteString("<FilterRule><Name>prefix</Name><Value>" + xmlText(rl.Prefix) + "</Value></FilterRule>")
			}
			if rl.Suffix != "" {
				b.WriteString("<FilterRule><Name>suffix</Name><Value>" + xmlText(rl.Suffix) + "</Value></FilterRule>")
			}
			b.WriteString("</S3Key></Filter></QueueConfiguration>")
		}
		b.WriteString("</NotificationConfiguration>")
		w.Header().Set("Content-Type", "application/xml")
		_, _ = io.WriteString(w, b.String())
	case http.MethodPut:
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var cfg notificationConfiguration
		if err == nil {
			err = xml.Unmarshal(body, &cfg)
		}
		if err != nil {
			s3Error(w, http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed")
			return
		}
		if len(cfg.Topics)+len(cfg.Lambdas) > 0 {
			s3Error(w, http.StatusNotImplemented, "NotImplemented", "the local S3 delivers notifications to SQS queues only")
			return
		}
		var rules []queueRule
		for _, qc := range cfg.Queues {
			rl := queueRule{ARN: qc.Queue, Events: qc.Events}
			for _, e := range qc.Events {
				if !strings.HasPrefix(e, "s3:ObjectCreated:") {
					s3Error(w, http.StatusBadRequest, "InvalidArgument", "the local S3 notifies s3:ObjectCreated:* events only, not "+e)
					return
				}
			}
			if qc.Filter != nil {
				for _, f := range qc.Filter.Rules {
					switch strings.ToLower(f.Name) {
					case "prefix":
						rl.Prefix = f.Value
					case "suffix":
						rl.Suffix = f.Value
					}
				}
			}
			rules = append(rules, rl)
		}
		n.mu.Lock()
		n.configs[bucket] = rules
		n.mu.Unlock()
		for _, rl := range rules {
			test, _ := json.Marshal(map[string]string{"Service": "Amazon S3", "Event": "s3:TestEvent", "Time": time.Now().UTC().Format(time.RFC3339), "Bucket": bucket})
			n.send(r.Context(), rl.ARN, string(test))
		}
		w.WriteHeader(http.StatusOK)
	default:
		s3Error(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "method not allowed")
	}
}

func (rl queueRule) matches(event, key string) bool {
	if !strings.HasPrefix(key, rl.Prefix) || !strings.HasSuffix(key, rl.Suffix) {
		return false
	}
	for _, e := range rl.Events {
		if e == "s3:ObjectCreated:*" || e == "s3:"+event {
			return true
		}
	}
	return false
}

// notify sends the event of a created object to each matching queue.
func (n *S3Notifications) notify(ctx context.Context, bucket, rawKey, event, version string) {
	key, err := url.PathUnescape(rawKey)
	if err != nil {
		key = rawKey
	}
	n.mu.Lock()
	var arns []string
	for _, rl := range n.configs[bucket] {
		if rl.matches(event, key) {
			arns = append(arns, rl.ARN)
		}
	}
	n.mu.Unlock()
	if len(arns) == 0 {
		return
	}
	// What S3 reports of the object: its size and ETag as stored.
	head := httptest.NewRecorder()
	hreq := httptest.NewRequestWithContext(ctx, http.MethodHead, "/"+bucket+"/"+rawKey, nil)
	if version != "" {
		hreq.URL.RawQuery = "versionId=" + url.QueryEscape(version)
	}
	n.next.ServeHTTP(head, hreq)
	size, _ := strconv.ParseInt(head.Header().Get("Content-Length"), 10, 64)
	now := time.Now().UTC()
	rec := events.S3EventRecord{
		EventVersion: "2.1", EventSource: "aws:s3", AWSRegion: Region, EventTime: now, EventName: event,
		S3: events.S3Entity{
			SchemaVersion: "1.0", ConfigurationID: "local",
			Bucket: events.S3Bucket{Name: bucket, Arn: "arn:aws:s3:::" + bucket},
			Object: events.S3Object{
				Key: url.QueryEscape(key), Size: size, ETag: strings.Trim(head.Header().Get("ETag"), `"`),
				VersionID: version, Sequencer: fmt.Sprintf("%016X", n.seq.Add(1)),
			},
		},
	}
	body, _ := json.Marshal(events.S3Event{Records: []events.S3EventRecord{rec}})
	for _, arn := range arns {
		n.send(ctx, arn, string(body))
	}
}

func (n *S3Notifications) send(ctx context.Context, arn, body string) {
	n.mu.Lock()
	c := n.sqs
	n.mu.Unlock()
	name := arn[strings.LastIndex(arn, ":")+1:]
	if c == nil {
		n.Failed.Add(1)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	u, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err == nil {
		_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: u.QueueUrl, MessageBody: aws.String(body)})
	}
	if err != nil {
		n.Failed.Add(1)
	}
}

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, xmlText(msg))
}

func xmlText(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
