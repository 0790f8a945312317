package wire

import (
	"fmt"
	"strings"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Environment variables several functions read (the CDK app sets them;
// each function's package lists its own). Never rename one.
const (
	EnvEventsTable    = "EVENTS_TABLE"
	EnvIncidentsTable = "INCIDENTS_TABLE"
	// EnvJobsTable is the job engine's table (jobs-sweep, jobs-worker,
	// replay, admin-api; the DLQ archiver reads a subject's erasure job).
	EnvJobsTable = "JOBS_TABLE"
	// EnvBucket is the archive bucket: claim-checked payloads, incident
	// bodies over the inline limit, archive topics' objects.
	EnvBucket = "ARCHIVE_BUCKET"
	// EnvQueueURLs is a JSON object: topic name → queue URL.
	EnvQueueURLs = "TOPIC_QUEUE_URLS"
	// EnvDLQURLs is a JSON object: topic name → DLQ URL.
	EnvDLQURLs = "TOPIC_DLQ_URLS"
	// EnvDLQARNs is a JSON object: topic name → DLQ ARN.
	EnvDLQARNs = "TOPIC_DLQ_ARNS"
	// EnvStage names the stage (e.g. "evp-prod"): the Stage dimension of
	// metrics and the subject of alerts.
	EnvStage = "STAGE_NAME"
	// EnvRetention is the ledger retention (the dedupe window), e.g.
	// "336h"; replay recreates expired events with it.
	EnvRetention = "LEDGER_RETENTION"
	// EnvClaimCheckBytes is the payload size above which payloads go to
	// the bucket (ingest, and replay which re-applies it).
	EnvClaimCheckBytes = "CLAIM_CHECK_BYTES"
	// EnvPurgeTable is the cache purge service's table (purge-api,
	// consumer-purge, admin-api).
	EnvPurgeTable = "PURGE_TABLE"
	// EnvIngestFunction is the ingest function's ARN (a name works too, as
	// in the local stack): the functions that publish through ingest.
	EnvIngestFunction = "INGEST_FUNCTION_ARN"
	// EnvIngestTimeout bounds one ingest invoke, e.g. "10s".
	EnvIngestTimeout = "INGEST_TIMEOUT"
	// EnvHealthFunction is the subscriber-health function's ARN (a name
	// works too, as in the local stack): the consumers and admin-api tell it
	// of a breaker's transition (an asynchronous invoke) so the topic's event
	// source mapping follows at once rather than at its next scheduled run.
	// Unset: the schedule alone applies it.
	EnvHealthFunction = "HEALTH_FUNCTION"
	// EnvIncidentInlineBytes is the largest incident body kept inline
	// (larger ones go to the bucket).
	EnvIncidentInlineBytes = "INCIDENT_INLINE_BYTES"
)

// Required reads a variable that must be set; a missing one is recorded as
// "NAME is required" (why, when given) in r.Err.
func Required(r *envconf.Reader, name, why string) string {
	v := r.String(name, "")
	if v == "" {
		if why != "" {
			r.Fail(fmt.Errorf("%s is required (%s)", name, why))
		} else {
			r.Fail(fmt.Errorf("%s is required", name))
		}
	}
	return v
}

// TopicMap reads a JSON object keyed by topic name that must have a value
// for every topic of the topology.
func TopicMap(r *envconf.Reader, name string, top topology.Topology, what string) map[string]string {
	m := map[string]string{}
	r.JSON(name, &m)
	for _, topic := range top.TopicNames() {
		if m[topic] == "" {
			r.Fail(fmt.Errorf("%s has no %s for topic %q", name, what, topic))
		}
	}
	return m
}

// FromVars names the environment variables a component's config was read
// from in its validation error (nil stays nil), so an operator knows which
// setting to fix: "DISPATCH_LEASE, …: ingest: dispatch lease 1s must be at
// least 5s".
func FromVars(err error, vars ...string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", strings.Join(vars, ", "), err)
}
