package platform

import (
	"github.com/siteswarm/eventplatform/internal/wire/catalog"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/table"
)

// cdk-nag's AwsSolutions pack reports no unsuppressed error or warning.
func TestNagClean(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		require.Empty(t, s.errors, "unsuppressed cdk-nag errors")
		require.Empty(t, s.warnings, "unsuppressed cdk-nag warnings")
	})
}

// The ingest function has no URL and no API route, and its resource policy
// admits exactly the webhook adapter's role and the configured producers.
func TestIngestIsPrivate(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		ingestID, _ := s.function(t, "ingest")
		require.Empty(t, s.tpl.ofType("AWS::Lambda::Url"), "no function may have a URL")
		for id, integ := range s.tpl.ofType("AWS::ApiGatewayV2::Integration") {
			require.NotEqual(t, ingestID, refID(integ.Properties["IntegrationUri"]), "API integration %s targets ingest", id)
		}
		var principals []string
		for id, perm := range s.tpl.ofType("AWS::Lambda::Permission") {
			if refID(perm.Properties["FunctionName"]) != ingestID {
				continue
			}
			require.Equal(t, "lambda:InvokeFunction", perm.Properties["Action"], id)
			principal := perm.Properties["Principal"]
			if ref := refID(principal); ref != "" {
				principals = append(principals, ref)
			} else {
				principals = append(principals, str(principal))
			}
		}
		_, purgeAPI := s.function(t, "purge-api")
		_, jobsWorker := s.function(t, "jobs-worker") // reconciliation
		want := []string{roleOf(t, purgeAPI), roleOf(t, jobsWorker)}
		for _, fn := range catalog.Webhooks() { // every provider's webhook function
			_, webhook := s.function(t, fn.Name)
			want = append(want, roleOf(t, webhook))
		}
		if s.p.StripeEventBridge != nil {
			want = append(want, roleOf(t, s.tpl.Resources[s.idOf(s.p.StripeEventBridge.Function.Fn)]))
		}
		if s.p.Stage.Name == "prod" {
			want = append(want, testProducerRole, testProducerAccount)
		}
		require.ElementsMatch(t, want, principals, "ingest resource policy principals")
		for _, p := range principals {
			require.NotContains(t, p, "amazonaws.com", "no service may invoke ingest")
			require.NotEqual(t, "*", p)
		}
	})
}

// The webhook role may invoke the ingest function and nothing else, and
// read only its own secret.
func TestWebhookRoleLeastPrivilege(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		ingestID, _ := s.function(t, "ingest")
		_, webhook := s.function(t, "webhook-stripe")
		got := actionsOn(s.statements(roleOf(t, webhook)))
		for res, actions := range got {
			for _, a := range actions {
				if strings.HasPrefix(a, "lambda:") {
					require.Equal(t, ingestID, res, "webhook may invoke only ingest")
					require.Equal(t, "lambda:InvokeFunction", a)
				}
			}
		}
		require.Equal(t, []string{"lambda:InvokeFunction"}, got[ingestID])
		require.Equal(t, []string{"secretsmanager:GetSecretValue"}, got[s.idOf(s.p.Secrets.StripeWebhook)])
		wantKeys := []string{ingestID, s.idOf(s.p.Secrets.StripeWebhook), "*", s.idOf(s.p.Functions["webhook-stripe"].LogGroup)}
		require.ElementsMatch(t, wantKeys, keys(got), "webhook role resources")
	})
}

// The ingest role writes the events table (no delete, no other table),
// claim-checked payloads and the topic queues only; it deletes a payload
// it stored for a retry of an erased event (every version, by id: listed
// under payloads/ only).
func TestIngestRoleLeastPrivilege(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		_, ingest := s.function(t, "ingest")
		got := actionsOn(s.statements(roleOf(t, ingest)))
		events := s.idOf(s.p.Tables[table.Events.Name])
		require.Equal(t, []string{"dynamodb:ConditionCheckItem", "dynamodb:GetItem", "dynamodb:PartiQLUpdate", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}, got[events])
		require.Equal(t, []string{"s3:DeleteObjectVersion", "s3:PutObject"}, got[s.idOf(s.p.Bucket)+"/payloads/*"])
		require.Equal(t, []string{"s3:ListBucketVersions"}, got[s.idOf(s.p.Bucket)])
		for _, tp := range s.p.Topology.Topics {
			require.Equal(t, []string{"sqs:SendMessage"}, got[s.idOf(s.p.Queues[tp.Name].Queue)], tp.Name)
			require.NotContains(t, got, s.idOf(s.p.Queues[tp.Name].DLQ), "ingest never writes a DLQ")
		}
		require.Len(t, got, 4+len(s.p.Topology.Topics)+1, "events table, payloads, the bucket's version listing, queues, log group, X-Ray: %v", keys(got))
	})
}

// Every function role: no "*" action, and the only "*" resources are
// X-Ray's, subscriber-health's lambda:ListEventSourceMappings and
// admin-api's cloudwatch:GetMetricData (none supports resource-level
// permissions).
func TestNoWildcardsBeyondXRay(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		for name := range s.p.Functions {
			_, fn := s.function(t, name)
			for _, st := range s.statements(roleOf(t, fn)) {
				for _, a := range st.Actions {
					require.NotContains(t, a, "*", "%s: wildcard action %s", name, a)
				}
				for _, r := range st.Resources {
					if r == "*" {
						for _, a := range st.Actions {
							listsMappings := name == RoleSubscriberHealth && a == "lambda:ListEventSourceMappings"
							readsMetrics := name == RoleAdminAPI && a == "cloudwatch:GetMetricData"
							require.True(t, strings.HasPrefix(a, "xray:") || listsMappings || readsMetrics, "%s: %s on *", name, a)
						}
					}
				}
			}
		}
	})
}

// Queues and DLQs are encrypted and deny non-TLS access; DLQs keep messages
// 14 days.
func TestQueuesEncryptedAndSSLOnly(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		policies := s.tpl.ofType("AWS::SQS::QueuePolicy")
		for _, tp := range s.p.Topology.Topics {
			for _, q := range []string{s.idOf(s.p.Queues[tp.Name].Queue), s.idOf(s.p.Queues[tp.Name].DLQ)} {
				require.Equal(t, true, s.tpl.Resources[q].Properties["SqsManagedSseEnabled"], q)
				require.True(t, deniesInsecureTransport(policies, q, "Queues"), "%s has no SSL-only policy", q)
			}
			require.Equal(t, float64(14*24*3600), s.tpl.Resources[s.idOf(s.p.Queues[tp.Name].DLQ)].Properties["MessageRetentionPeriod"])
		}
	})
}

// deniesInsecureTransport finds a policy on target that denies every
// request with aws:SecureTransport = false.
func deniesInsecureTransport(policies map[string]resource, target, targetsKey string) bool {
	for _, pol := range policies {
		attached := false
		for _, t := range list(pol.Properties[targetsKey]) {
			if refID(t) == target {
				attached = true
			}
		}
		if v := refID(pol.Properties["Bucket"]); v == target {
			attached = true
		}
		if !attached {
			continue
		}
		for _, st := range parseStatements(pol.Properties["PolicyDocument"]) {
			if st.Effect == "Deny" && dig(st.Condition, "Bool", "aws:SecureTransport") == "false" {
				return true
			}
		}
	}
	return false
}

// Tables: on demand, PITR, SSE, TTL, indexes as internal/aws/table defines
// them; production keeps them (retain + deletion protection), dev does not.
func TestTablesMatchDefinitions(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		for _, def := range table.All() {
			r := s.tpl.Resources[s.idOf(s.p.Tables[def.Name])]
			props := r.Properties
			require.Equal(t, def.PhysicalName(s.p.Stage.Prefix()), props["TableName"])
			require.Equal(t, "PAY_PER_REQUEST", props["BillingMode"], def.Name)
			require.Equal(t, true, dig(props, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled"), def.Name)
			require.Equal(t, true, dig(props, "SSESpecification", "SSEEnabled"), def.Name)
			if def.TTLAttribute != "" {
				require.Equal(t, def.TTLAttribute, dig(props, "TimeToLiveSpecification", "AttributeName"), def.Name)
				require.Equal(t, true, dig(props, "TimeToLiveSpecification", "Enabled"), def.Name)
			} else {
				require.Nil(t, props["TimeToLiveSpecification"], "%s never expires", def.Name)
			}
			gsis := map[string]map[string]any{}
			for _, g := range list(props["GlobalSecondaryIndexes"]) {
				gm := g.(map[string]any)
				gsis[str(gm["IndexName"])] = gm
			}
			require.Len(t, gsis, len(def.Indexes), def.Name)
			for _, ix := range def.Indexes {
				g := gsis[ix.Name]
				require.NotNil(t, g, "%s: index %s", def.Name, ix.Name)
				require.Equal(t, string(ix.Projection), dig(g, "Projection", "ProjectionType"), ix.Name)
				if ix.Projection == table.ProjectInclude {
					require.ElementsMatch(t, toAny(ix.NonKey), dig(g, "Projection", "NonKeyAttributes"), ix.Name)
				}
				ks := list(g["KeySchema"])
				require.Equal(t, ix.PK.Name, dig(ks[0], "AttributeName"), ix.Name)
				if ix.SK != nil {
					require.Equal(t, ix.SK.Name, dig(ks[1], "AttributeName"), ix.Name)
				}
			}
			if s.p.Stage.Name == "prod" {
				require.Equal(t, "Retain", r.DeletionPolicy, def.Name)
				require.Equal(t, true, props["DeletionProtectionEnabled"], def.Name)
			} else {
				require.Equal(t, "Delete", r.DeletionPolicy, def.Name)
				require.Equal(t, false, props["DeletionProtectionEnabled"], def.Name)
			}
		}
	})
}

// The archive bucket: SSL-only, encrypted, versioned, public access
// blocked, access-logged, claim-checked payloads expiring no sooner than the
// ledger, import files no later than it.
func TestArchiveBucket(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		id := s.idOf(s.p.Bucket)
		props := s.tpl.Resources[id].Properties
		require.NotEmpty(t, dig(props, "BucketEncryption", "ServerSideEncryptionConfiguration"))
		require.Equal(t, "Enabled", dig(props, "VersioningConfiguration", "Status"))
		for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
			require.Equal(t, true, dig(props, "PublicAccessBlockConfiguration", k), k)
		}
		require.Equal(t, s.idOf(s.p.AccessLogs), refID(dig(props, "LoggingConfiguration", "DestinationBucketName")))
		require.True(t, deniesInsecureTransport(s.tpl.ofType("AWS::S3::BucketPolicy"), id, ""), "bucket policy must deny non-TLS")
		var expiry, imports, importVersions float64
		for _, rule := range list(dig(props, "LifecycleConfiguration", "Rules")) {
			switch dig(rule, "Prefix") {
			case PrefixPayloads:
				expiry = num(t, dig(rule, "ExpirationInDays"))
			case PrefixImports:
				imports = num(t, dig(rule, "ExpirationInDays"))
				importVersions = num(t, dig(rule, "NoncurrentVersionExpiration", "NoncurrentDays"))
			}
		}
		require.GreaterOrEqual(t, expiry, float64(s.p.Stage.LedgerRetentionDays), "payloads must outlive the ledger items that reference them")
		require.Equal(t, float64(s.p.Stage.LedgerRetentionDays), imports, "import files are kept no longer than the events they publish")
		require.Equal(t, float64(1), importVersions)
		if s.p.Stage.Name == "prod" {
			require.Equal(t, "Retain", s.tpl.Resources[id].DeletionPolicy)
		}
	})
}

// The alert topic is KMS-encrypted with a rotating customer key and
// SSL-only.
func TestAlertTopicEncrypted(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		topic := s.tpl.Resources[s.idOf(s.p.Alerts)]
		key := refID(topic.Properties["KmsMasterKeyId"])
		require.Equal(t, s.idOf(s.p.AlertsKey), key)
		require.Equal(t, true, s.tpl.Resources[key].Properties["EnableKeyRotation"])
		require.True(t, deniesInsecureTransport(s.tpl.ofType("AWS::SNS::TopicPolicy"), s.idOf(s.p.Alerts), "Topics"))
		subs := s.tpl.ofType("AWS::SNS::Subscription")
		if s.p.Stage.Name == "prod" {
			endpoints := map[string]string{}
			for _, sub := range subs {
				endpoints[str(sub.Properties["Protocol"])] = str(sub.Properties["Endpoint"])
			}
			require.Equal(t, map[string]string{"email": testAlarmEmail, "https": testAlarmEndpoint}, endpoints)
		} else {
			require.Empty(t, subs, "no alarm destination configured for dev")
		}
	})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// Only the senders (ingest, sweeper, replay and the admin API's in-process
// replay) write topic queues; each secret is readable by its one function;
// only the retention expiry (jobs-worker) may delete table items, of the
// events and incidents tables, and only subject erasure (jobs-worker)
// may delete objects: claim-checked payloads and incident bodies, each
// version by id (the bucket is versioned; nobody deletes without a
// version id, which would leave the data as a noncurrent version), and
// list their versions under those prefixes only — and ingest, under
// payloads/ alone: a retry of an erased event deletes the payload it
// stored.
var erasable = regexp.MustCompile(`/(payloads|incidents|archive|jobs|imports)/\*$`)

var erasablePrefixes = []any{"payloads/*", "incidents/*", "archive/*", "jobs/*", "imports/*"}

func TestWhoMayDoWhat(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		senders := map[string][]string{} // queue id → functions
		readers := map[string][]string{} // secret id → functions
		var deleters, listers, itemDeleters []string
		for name := range s.p.Functions {
			_, fn := s.function(t, name)
			for res, actions := range actionsOn(s.statements(roleOf(t, fn))) {
				for _, a := range actions {
					switch a {
					case "sqs:SendMessage":
						senders[res] = append(senders[res], name)
					case "secretsmanager:GetSecretValue":
						readers[res] = append(readers[res], name)
					case "s3:DeleteObjectVersion":
						// Subject erasure (jobs-worker) deletes claim-checked
						// payloads and incident bodies and rewrites the audit
						// archive, exports and import files (the retention
						// purge deletes those too), and nothing else may.
						if (name != RoleJobsWorker || !erasable.MatchString(res)) && (name != RoleIngest || !strings.HasSuffix(res, "/payloads/*")) {
							t.Errorf("%s may %s on %s", name, a, res)
						}
						deleters = append(deleters, name+" "+res)
					case "dynamodb:DeleteItem":
						// The retention expiry (jobs-worker) deletes old events
						// and resolved incidents, and nothing else may delete
						// an item.
						events, incidents := s.idOf(s.p.Tables[table.Events.Name]), s.idOf(s.p.Tables[table.Incidents.Name])
						if name != RoleJobsWorker || res != events && res != incidents {
							t.Errorf("%s may %s on %s", name, a, res)
						}
						itemDeleters = append(itemDeleters, res)
					case "dynamodb:BatchWriteItem", "dynamodb:DeleteTable", "s3:DeleteObject", "s3:DeleteBucket", "sqs:PurgeQueue", "sqs:DeleteQueue":
						t.Errorf("%s may %s on %s", name, a, res)
					}
				}
			}
			// Listing versions is a bucket action: only erasure's, and
			// only under the prefixes it erases.
			for _, st := range s.statements(roleOf(t, fn)) {
				if st.Effect != "Allow" || !slices.Contains(st.Actions, "s3:ListBucketVersions") {
					continue
				}
				require.Contains(t, []string{RoleJobsWorker, RoleIngest}, name, "%s may list object versions", name)
				require.Equal(t, []string{"s3:ListBucketVersions"}, st.Actions, "its own statement: the condition is for it alone")
				prefixes := erasablePrefixes
				if name == RoleIngest {
					prefixes = []any{"payloads/*"}
				}
				require.Equal(t, map[string]any{"StringLike": map[string]any{"s3:prefix": prefixes}}, st.Condition)
				listers = append(listers, name)
			}
		}
		require.ElementsMatch(t, []string{RoleJobsWorker, RoleIngest}, listers, "jobs-worker lists versions (erasure's proof), ingest those of a payload it deletes")
		for _, tp := range s.p.Topology.Topics {
			queueSenders := []string{"ingest", "sweeper", "replay", "admin-api"}
			var dlqSenders []string
			if c, ok := s.p.Consumers[tp.Name]; ok {
				dlqSenders = []string{c.Spec.Name}
				if !tp.FIFO {
					// A completion carried in a copy (consume).
					queueSenders = append(queueSenders, c.Spec.Name)
				}
			}
			require.ElementsMatch(t, queueSenders, senders[s.idOf(s.p.Queues[tp.Name].Queue)], tp.Name)
			require.ElementsMatch(t, dlqSenders, senders[s.idOf(s.p.Queues[tp.Name].DLQ)], "%s DLQ: only its consumer (poison messages)", tp.Name)
		}
		require.Equal(t, []string{"webhook-stripe"}, readers[s.idOf(s.p.Secrets.StripeWebhook)])
		require.Equal(t, []string{"admin-api"}, readers[s.idOf(s.p.Secrets.AdminAPIKey)])
		require.Equal(t, []string{"jobs-worker"}, readers[s.idOf(s.p.Secrets.StripeAPIKey)])
		require.Len(t, deleters, 6, "jobs-worker deletes under payloads/, incidents/, archive/, jobs/ and imports/ only, ingest under payloads/: %v", deleters)
		require.ElementsMatch(t, []string{s.idOf(s.p.Tables[table.Events.Name]), s.idOf(s.p.Tables[table.Incidents.Name])}, itemDeleters,
			"the retention expiry deletes items of the events and incidents tables only")
		require.ElementsMatch(t, []string{"jobs-worker", "replay", "admin-api", "jobs-sweep", "import-trigger"}, senders[s.idOf(s.p.Jobs.Queue)], "wakes")
		for topic, sec := range s.p.Secrets.Subscribers {
			require.Equal(t, []string{"consumer-" + slug(topic)}, readers[s.idOf(sec)], topic)
		}
	})
}

// The purge API is private like ingest: only the stage's purge producers
// may invoke it, and its role may invoke ingest and touch the purge table,
// nothing else.
func TestPurgeAPIIsPrivate(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		id, fn := s.function(t, "purge-api")
		var principals []string
		for _, perm := range s.tpl.ofType("AWS::Lambda::Permission") {
			if refID(perm.Properties["FunctionName"]) == id {
				principals = append(principals, str(perm.Properties["Principal"]))
			}
		}
		var want []string
		if s.p.Stage.Name == "prod" {
			want = []string{testProducerRole}
		}
		require.ElementsMatch(t, want, principals)
		ingestID, _ := s.function(t, "ingest")
		purgeTable := s.idOf(s.p.Tables["purge"])
		granted := actionsOn(s.statements(roleOf(t, fn)))
		require.Len(t, granted, 4, "ingest, the purge table, its log group, X-Ray: %v", granted)
		for res, actions := range granted {
			switch {
			case strings.Contains(res, ingestID):
				require.Equal(t, []string{"lambda:InvokeFunction"}, actions)
			case strings.Contains(res, purgeTable):
				require.ElementsMatch(t, []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}, actions)
			case strings.Contains(res, "PurgeApiLogs"), res == "*":
			default:
				t.Errorf("purge-api may %v on %s", actions, res)
			}
		}
	})
}
