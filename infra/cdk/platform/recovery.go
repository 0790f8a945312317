package platform

import (
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
	"github.com/siteswarm/eventplatform/internal/wire/replayfn"
	"github.com/siteswarm/eventplatform/internal/wire/sweeperfn"
)

const (
	// SweepSchedule is how often the outbox sweeper runs (its
	// descriptor's schedule).
	SweepSchedule = sweeperfn.Every
	// archiverTimeout: DLQ visibility timeouts are derived from it.
	archiverTimeout = dlqarchiverfn.FunctionTimeout
	// PrefixIncidents holds incident bodies and the claim-checked payloads
	// copied for them (never expire: incidents never do).
	PrefixIncidents = "incidents/"
)

// newRecovery creates the recovery plane: the outbox sweeper on its
// schedule, the DLQ archiver on every DLQ, and the replay function with its
// state machine.
func (p *Platform) newRecovery() {
	p.newSweeper()
	p.newArchiver()
	replay := p.newReplay()
	p.newReplayStateMachine(replay)
}

func (p *Platform) newSweeper() {
	events, incidents := p.Tables[table.Events.Name], p.Tables[table.Incidents.Name]
	f := p.newFunction(p.spec(sweeperfn.Function, map[string]*string{
		wire.EnvEventsTable:    events.TableName(),
		wire.EnvIncidentsTable: incidents.TableName(),
		wire.EnvBucket:         p.Bucket.BucketName(),
		wire.EnvQueueURLs:      p.queueURLs(false),
		wire.EnvStage:          jsii.String(p.Stage.Prefix()),
	}))
	// Due rows through the due index (and the legacy sweep index, until it
	// is dropped), the rows and ledgers by BatchGetItem; claims, reschedules,
	// outcomes and settlements by conditional UpdateItem; abandonment is
	// one transaction (row update + incident put) after reading the
	// incident; stuck replays are listed through the status index and
	// reopened (read, conditional put).
	allow(f.Role, []string{"dynamodb:Query"}, indexArn(events, table.IndexDue), indexArn(events, table.IndexSweep), indexArn(incidents, table.IndexIncidentStatus))
	allow(f.Role, []string{"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:UpdateItem"}, events.TableArn())
	allow(f.Role, []string{"dynamodb:GetItem", "dynamodb:PutItem"}, incidents.TableArn())
	allow(f.Role, []string{"sqs:SendMessage"}, p.topicQueueArns()...)
	p.allowBodies(f, true)
	p.schedules(f)
}

// allowBodies lets a recovery function keep incident bodies (write under
// incidents/) and, when copying claim-checked payloads into an incident,
// read them from payloads/.
func (p *Platform) allowBodies(f *Function, readPayloads bool) {
	allow(f.Role, []string{"s3:PutObject"}, p.objectsArn(PrefixIncidents))
	re := `^Resource::<ArchiveBucket[0-9A-F]+\.Arn>/incidents/\*$`
	if readPayloads {
		allow(f.Role, []string{"s3:GetObject"}, p.objectsArn(PrefixPayloads))
		re = `^Resource::<ArchiveBucket[0-9A-F]+\.Arn>/(incidents|payloads)/\*$`
	}
	suppressWildcard(f.Role, re,
		"Incident bodies are keyed per incident (incidents/<tenant>/<incident>/…) and claim-checked payloads per event (payloads/…): the grant is those prefixes of the archive bucket only.")
}

func (p *Platform) newArchiver() {
	events, incidents := p.Tables[table.Events.Name], p.Tables[table.Incidents.Name]
	var dlqARNs []keyValue
	for _, tp := range p.Topology.Topics {
		dlqARNs = append(dlqARNs, keyValue{tp.Name, p.Queues[tp.Name].DLQ.QueueArn()})
	}
	f := p.newFunction(p.spec(dlqarchiverfn.Function, map[string]*string{
		wire.EnvEventsTable:            events.TableName(),
		wire.EnvIncidentsTable:         incidents.TableName(),
		wire.EnvJobsTable:              p.Tables[table.Jobs.Name].TableName(),
		wire.EnvBucket:                 p.Bucket.BucketName(),
		wire.EnvDLQARNs:                jsonObject(dlqARNs),
		dlqarchiverfn.EnvAlertTopicARN: p.Alerts.TopicArn(),
		wire.EnvStage:                  jsii.String(p.Stage.Prefix()),
	}))
	// Incident upsert (read, conditional put); outbox row → dlq, and the
	// row read for its last error.
	allow(f.Role, []string{"dynamodb:GetItem", "dynamodb:PutItem"}, incidents.TableArn())
	// The incident's put is a transaction with a condition check on the
	// dispatch row: no incident of an erased event (its erasure marker).
	allow(f.Role, []string{"dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:ConditionCheckItem"}, events.TableArn())
	// A dead letter whose dispatch row is gone (its event past the
	// ledger's retention) is dropped when an erasure of its subject ran
	// since it was sent: the erasure's job, read by its idempotency key.
	allow(f.Role, []string{"dynamodb:GetItem"}, p.Tables[table.Jobs.Name].TableArn())
	p.allowBodies(f, true)
	p.grantPublishAlerts(f)
	// One per topic's DLQ (each grants receive/delete/visibility on it).
	p.eventSources(f)
	p.Archiver = f
}

// replayEnv is the environment of the replay service (the replay function
// and the admin API, which runs it in-process).
func (p *Platform) replayEnv() map[string]*string {
	env := map[string]*string{
		wire.EnvEventsTable:    p.Tables[table.Events.Name].TableName(),
		wire.EnvIncidentsTable: p.Tables[table.Incidents.Name].TableName(),
		wire.EnvBucket:         p.Bucket.BucketName(),
		wire.EnvQueueURLs:      p.queueURLs(false),
		wire.EnvRetention:      p.retention(),
	}
	// Replaying a failed job's incident restarts the job; `evp jobs` and
	// /admin/jobs start, list, cancel and restart jobs.
	p.jobsEnv(env)
	return env
}

// allowReplay grants what the replay service and the operator views call:
// incidents (read, list through both indexes, conditional transitions),
// events (load, row read, reset for replay, restore of an expired event's
// ledger item and row in one transaction, the tenant search: the
// tenant-shard and legacy tenant indexes, a subject's or customer's
// events through the subject identifier indexes, the listed events'
// items and rows in batches), bodies and payloads (read; payloads over
// the claim-check threshold are re-stored), topic queues (send).
func (p *Platform) allowReplay(f *Function) {
	events, incidents := p.Tables[table.Events.Name], p.Tables[table.Incidents.Name]
	// The restore of an expired event checks its incident in the same
	// transaction (not erased: the subject erasure's guard).
	allow(f.Role, []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:ConditionCheckItem"}, incidents.TableArn())
	allow(f.Role, []string{"dynamodb:Query"},
		indexArn(incidents, table.IndexIncidentStatus), indexArn(incidents, table.IndexIncidentTenant),
		indexArn(events, table.IndexTenantShard), indexArn(events, table.IndexTenant),
		indexArn(events, table.IndexSubject), indexArn(events, table.IndexOwner))
	allow(f.Role, []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"}, events.TableArn())
	allow(f.Role, []string{"s3:GetObject"}, p.objectsArn(PrefixIncidents), p.objectsArn(PrefixPayloads))
	allow(f.Role, []string{"s3:PutObject"}, p.objectsArn(PrefixPayloads))
	suppressWildcard(f.Role, `^Resource::<ArchiveBucket[0-9A-F]+\.Arn>/(incidents|payloads)/\*$`,
		"Replay reads incident bodies (incidents/<tenant>/<incident>/…) and claim-checked payloads (payloads/<tenant>/<event>/…) and re-stores large payloads under payloads/: those prefixes only.")
	allow(f.Role, []string{"sqs:SendMessage"}, p.topicQueueArns()...)
	p.allowJobs(f, table.IndexJobsTenant, table.IndexJobsKind)
	p.allowJobTransitions(f) // operators cancel, retry and restart jobs
}

func (p *Platform) newReplay() *Function {
	f := p.newFunction(p.spec(replayfn.Function, p.replayEnv()))
	p.allowReplay(f)
	p.allowExportDownloads(f) // evp jobs download
	return f
}
