// Package dlqarchiverfn wires the dlq-archiver function (SQS event sources on
// every topic DLQ): environment → Config, DynamoDB, S3 and SNS clients, the
// DLQ archiver (internal/dlqarchiver).
package dlqarchiverfn

import (
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/snsalert"
	"github.com/siteswarm/eventplatform/internal/dlqarchiver"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

// Name is the function's name.
const Name = "dlq-archiver"

// EnvAlertTopicARN is the SNS alert topic; unset, alerts are log lines.
// The archiver also reads EVENTS_TABLE, INCIDENTS_TABLE, JOBS_TABLE (the
// subject erasures), ARCHIVE_BUCKET, TOPIC_DLQ_ARNS, STAGE_NAME and
// INCIDENT_INLINE_BYTES.
const EnvAlertTopicARN = "ALERT_TOPIC_ARN"

// FunctionTimeout covers a batch of ten with S3 copies; the DLQs'
// visibility timeout must be at least this.
const FunctionTimeout = 60 * time.Second

// Config is the dlq-archiver function's configuration.
type Config struct {
	Archiver       dlqarchiver.Config
	EventsTable    string
	IncidentsTable string
	// JobsTable holds the subject erasures (their jobs), asked about a
	// dead letter whose event is past its ledger retention.
	JobsTable     string
	Bucket        string
	AlertTopicARN string
	// Stage names the stage in alert subjects.
	Stage       string
	InlineBytes int
}

// Load reads the config from the environment and validates it.
func Load(r *envconf.Reader, top topology.Topology) (Config, error) {
	c := Config{
		EventsTable:    wire.Required(r, wire.EnvEventsTable, ""),
		IncidentsTable: wire.Required(r, wire.EnvIncidentsTable, ""),
		JobsTable:      wire.Required(r, wire.EnvJobsTable, "the subject erasures"),
		Bucket:         wire.Required(r, wire.EnvBucket, "incident bodies over the inline limit"),
		AlertTopicARN:  r.String(EnvAlertTopicARN, ""),
		Stage:          r.String(wire.EnvStage, ""),
		InlineBytes:    r.Int(wire.EnvIncidentInlineBytes, incident.DefaultInlineBytes),
	}
	dlqs := wire.TopicMap(r, wire.EnvDLQARNs, top, "DLQ ARN")
	c.Archiver.DLQTopics = map[string]string{}
	for topic, arn := range dlqs {
		c.Archiver.DLQTopics[arn] = topic
	}
	c.Archiver = c.Archiver.WithDefaults()
	if err := r.Err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks the config with the components' own checks.
func (c Config) Validate() error {
	return errors.Join(
		wire.FromVars(c.Archiver.Validate(), wire.EnvDLQARNs),
		wire.FromVars(incident.CheckInlineBytes(c.InlineBytes), wire.EnvIncidentInlineBytes),
	)
}

// Clients are the AWS services the archiver calls; SNS may be nil without
// an alert topic.
type Clients struct {
	DynamoDB *dynamodb.Client
	S3       *s3.Client
	SNS      *sns.Client
}

// NewClients builds them from one aws.Config.
func NewClients(cfg aws.Config) Clients {
	return Clients{DynamoDB: dynamodb.NewFromConfig(cfg), S3: s3.NewFromConfig(cfg), SNS: sns.NewFromConfig(cfg)}
}

// New builds the DLQ archiver. Without an alert topic (or SNS client),
// alerts are warning log lines.
func New(c Config, cl Clients, rt wire.Runtime) (*dlqarchiver.Archiver, error) {
	rt = rt.WithDefaults()
	var alerts dlqarchiver.Alerter = dlqarchiver.LogAlerter{Log: rt.Log}
	if c.AlertTopicARN != "" && cl.SNS != nil {
		alerts = &snsalert.SNS{Client: cl.SNS, TopicARN: c.AlertTopicARN, Stage: c.Stage}
	}
	events := &dynamo.Events{Client: cl.DynamoDB, Table: c.EventsTable, Log: rt.Log}
	return dlqarchiver.New(c.Archiver, dlqarchiver.Deps{
		Incidents: &dynamo.Recovery{Events: events, Incidents: &dynamo.Incidents{Client: cl.DynamoDB, Table: c.IncidentsTable}},
		Rows:      events,
		Erasures:  Erasures{Jobs: &dynamo.Jobs{Client: cl.DynamoDB, Table: c.JobsTable}},
		Bodies:    &incident.Bodies{Store: &s3blob.S3{Client: cl.S3}, Bucket: c.Bucket, Threshold: c.InlineBytes},
		Alerts:    alerts,
		Metrics:   rt.Metrics,
		Log:       rt.Log,
		Now:       rt.Now,
	})
}
