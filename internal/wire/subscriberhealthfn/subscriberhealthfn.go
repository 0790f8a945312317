// Package subscriberhealthfn wires the subscriber-health function (an EventBridge
// schedule, and asynchronous notices from the consumers and the admin
// API): environment → Config, DynamoDB, SQS, Lambda and SNS clients, the
// health monitor (internal/subscriberhealth).
package subscriberhealthfn

import (
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/lambdaesm"
	"github.com/siteswarm/eventplatform/internal/aws/snsalert"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

// Name is the function's name (its role).
const Name = "subscriber-health"

// Environment variables of subscriber-health, besides EVENTS_TABLE,
// TOPIC_QUEUE_URLS and STAGE_NAME. Never rename one.
const (
	// EnvMappings is a JSON object: topic → {"function": the consumer's
	// name or ARN, "queueArn": the topic queue's ARN}. The monitor watches
	// exactly these topics and touches only the mapping between that
	// function and that queue.
	EnvMappings = "HEALTH_MAPPINGS"
	// EnvAlertTopicARN is the SNS alert topic; unset, alerts are log lines.
	EnvAlertTopicARN = "ALERT_TOPIC_ARN"
	// EnvPeriod is the schedule's period, e.g. "1m" (a run waits for
	// whatever is due before the next).
	EnvPeriod = "HEALTH_PERIOD"
)

// FunctionTimeout covers a run that waits out a period (1 minute) for a
// probe that is due before the next one.
const FunctionTimeout = 90 * time.Second

// Mapping is one topic's entry of HEALTH_MAPPINGS.
type Mapping struct {
	Function string `json:"function"`
	QueueARN string `json:"queueArn"`
}

// Config is the function's configuration.
type Config struct {
	Monitor       subscriberhealth.MonitorConfig
	EventsTable   string
	QueueURLs     map[string]string
	Mappings      map[string]Mapping
	AlertTopicARN string
	Stage         string
}

// Load reads the config from the environment and validates it.
func Load(r *envconf.Reader, top topology.Topology) (Config, error) {
	c := Config{
		EventsTable:   wire.Required(r, wire.EnvEventsTable, ""),
		QueueURLs:     wire.TopicMap(r, wire.EnvQueueURLs, top, "queue URL"),
		AlertTopicARN: r.String(EnvAlertTopicARN, ""),
		Stage:         r.String(wire.EnvStage, ""),
	}
	c.Monitor.Period = r.Duration(EnvPeriod, subscriberhealth.DefaultPeriod)
	r.JSON(EnvMappings, &c.Mappings)
	for _, name := range top.TopicNames() {
		m, ok := c.Mappings[name]
		if !ok {
			continue
		}
		tp, _ := top.Topic(name)
		if m.Function == "" || m.QueueARN == "" {
			r.Fail(fmt.Errorf("%s: topic %q needs a function and a queueArn", EnvMappings, name))
		}
		if !tp.Breaker.Off {
			c.Monitor.Topics = append(c.Monitor.Topics, tp)
		}
	}
	for name := range c.Mappings {
		if _, ok := top.Topic(name); !ok {
			r.Fail(fmt.Errorf("%s names %q, not a topic of the topology", EnvMappings, name))
		}
	}
	if c.Monitor.Period < time.Second || c.Monitor.Period > 10*time.Minute {
		r.Fail(fmt.Errorf("%s must be 1s..10m", EnvPeriod))
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, nil
}

// Clients are the AWS services the function calls; SNS may be nil without
// an alert topic.
type Clients struct {
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	Lambda   *lambda.Client
	SNS      *sns.Client
}

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients {
	return Clients{DynamoDB: dynamodb.NewFromConfig(cfg), SQS: sqs.NewFromConfig(cfg), Lambda: lambda.NewFromConfig(cfg), SNS: sns.NewFromConfig(cfg)}
}

// New builds the monitor. Without an alert topic (or SNS client), alerts
// are warning log lines.
func New(c Config, cl Clients, rt wire.Runtime) (*subscriberhealth.Monitor, error) {
	rt = rt.WithDefaults()
	if cl.DynamoDB == nil || cl.Lambda == nil {
		return nil, errors.New(Name + ": needs DynamoDB and Lambda clients")
	}
	var alerts subscriberhealth.Alerter = subscriberhealth.LogAlerter{Log: rt.Log}
	if c.AlertTopicARN != "" && cl.SNS != nil {
		alerts = &snsalert.Health{Client: cl.SNS, TopicARN: c.AlertTopicARN, Stage: c.Stage}
	}
	sources := map[string]lambdaesm.Source{}
	for topic, m := range c.Mappings {
		sources[topic] = lambdaesm.Source{Function: m.Function, QueueARN: m.QueueARN}
	}
	var backlogs subscriberhealth.Backlogs
	if cl.SQS != nil {
		backlogs = &sqsqueue.Stats{Client: cl.SQS, URLs: c.QueueURLs}
	}
	return subscriberhealth.NewMonitor(c.Monitor, subscriberhealth.MonitorDeps{
		Store:    &dynamo.Breakers{Client: cl.DynamoDB, Table: c.EventsTable},
		Mappings: &lambdaesm.Mappings{Client: cl.Lambda, Sources: sources},
		Backlogs: backlogs,
		Alerter:  alerts,
		Metrics:  rt.Metrics,
		Log:      rt.Log,
		Now:      rt.Now,
	})
}
