package platform

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/consumerkinds"
)

// Context keys the app reads (cdk.json "context" or `-c key=value`).
const (
	// CtxStage selects the stage: `cdk deploy -c stage=prod`.
	CtxStage = "stage"
	// CtxStages is the per-stage settings object in cdk.json:
	// {"prod": {"production": true, ...}, "dev": {...}}.
	CtxStages = "evp:stages"
	// CtxAssetDir is where `make build` left the bootstrap binaries
	// (<dir>/<role>/bootstrap); relative to the directory the app runs in.
	CtxAssetDir = "evp:assetDir"
	// CtxStageFile names a JSON file of the stage's settings (the same keys
	// as a cdk.json entry; the file's keys win over cdk.json's, -c over
	// both). `make synth/deploy` pass infra/cdk/stages/<stage>.json when it
	// exists; infra/cdk/stages/prod.example.json is the one to copy.
	CtxStageFile = "evp:stageFile"
)

// ExampleStageFile is the committed production stage to copy.
const ExampleStageFile = "infra/cdk/stages/prod.example.json"

// DefaultStage is used when no -c stage=… is given (the Makefile's default).
const DefaultStage = "dev"

// Stage is everything that differs between deployments of the platform.
// Settings come from cdk.json (CtxStages[name]) and can be overridden one by
// one on the command line with the same JSON key (`-c alarmEmail=ops@x.io`).
type Stage struct {
	// Name is the stage name; resources are prefixed "evp-<name>".
	Name string `json:"-"`
	// Production turns on the safe defaults: retained tables and bucket,
	// deletion protection, long log retention, reserved concurrency.
	Production bool `json:"production"`
	// Account and Region pin the stage to one AWS environment (strongly
	// recommended for production so a wrong profile cannot deploy it
	// elsewhere). Empty: the CLI's current account/region.
	Account string `json:"account"`
	Region  string `json:"region"`
	// Retain keeps the tables and the archive bucket when the stack is
	// deleted (and turns on DynamoDB deletion protection).
	Retain *bool `json:"retain"`
	// LogRetentionDays of every log group (a CloudWatch Logs retention value).
	LogRetentionDays int `json:"logRetentionDays"`
	// LogLevel is the Lambda application log level (AWS_LAMBDA_LOG_LEVEL):
	// DEBUG, INFO, WARN or ERROR.
	LogLevel string `json:"logLevel"`
	// AlarmEmail and AlarmEmails subscribe addresses to the alert topic.
	AlarmEmail  string   `json:"alarmEmail"`
	AlarmEmails []string `json:"alarmEmails"`
	// AlarmTopicARNs are existing SNS topics (a paging or chat
	// integration, e.g. AWS Chatbot's) every alarm also notifies.
	AlarmTopicARNs []string `json:"alarmTopicArns"`
	// AlarmHTTPSEndpoints subscribe HTTPS endpoints that confirm SNS
	// subscriptions themselves (PagerDuty, Opsgenie, a chat relay) to the
	// alert topic. A production stage names at least one destination.
	AlarmHTTPSEndpoints []string `json:"alarmHttpsEndpoints"`
	// ProducerPrincipals may invoke the ingest function directly, besides
	// the webhook adapters: IAM role ARNs or 12-digit account ids.
	ProducerPrincipals []string `json:"producerPrincipals"`
	// ReserveConcurrency reserves the recommended concurrency
	// (RecommendedReservations: ingest 150, webhook 150, admin 10, sweeper
	// 3, jobs-sweep 2: a quota of 415); ReservedConcurrency sets functions one by one
	// (function name → executions, 0 for none) and wins. Nothing is
	// reserved by default, on any stage: AWS keeps 100 executions of the
	// account's quota unreserved, and a fresh account's quota is often too
	// small to reserve anything. The synth prints the quota a stage needs.
	ReserveConcurrency  *bool          `json:"reserveConcurrency"`
	ReservedConcurrency map[string]int `json:"reservedConcurrency"`
	// LedgerRetentionDays is how long ledger items (the dedupe window) and
	// claim-checked payloads are kept (at least 7).
	LedgerRetentionDays int `json:"ledgerRetentionDays"`
	// APIRateLimit and APIBurstLimit throttle the HTTP API's default stage
	// (requests per second, burst): by default a Stripe burst
	// (StripeBurstRate) and twice it at once, well inside the account's
	// regional HTTP API quota (10,000 a second, 5,000 burst, shared by
	// every API of the account).
	APIRateLimit  int `json:"apiRateLimit"`
	APIBurstLimit int `json:"apiBurstLimit"`
	// Subscribers maps an HTTP-consumer topic to its subscriber URL.
	Subscribers map[string]string `json:"subscribers"`
	// PurgeZones maps tenants to their Cloudflare zone id;
	// PurgeDefaultZone serves every other tenant (one zone for all sites).
	// Without either, the cache purge consumer is not deployed and
	// cache.purge is alarmed as unconsumed.
	PurgeZones       map[string]string `json:"purgeZones"`
	PurgeDefaultZone string            `json:"purgeDefaultZone"`
	// PurgeRate paces purge API calls per second per consumer instance
	// (the account's Cloudflare limit divided by the topic's max
	// concurrency; default 4).
	PurgeRate int `json:"purgeRate"`
	// PurgeProducerPrincipals may invoke the purge-api function (role ARNs
	// or account ids), e.g. the CMS service's role.
	PurgeProducerPrincipals []string `json:"purgeProducerPrincipals"`
	// StripeDefaultTenant is the tenant of Stripe events that name none
	// (no Connect account mapping and no metadata.tenant_id).
	StripeDefaultTenant string `json:"stripeDefaultTenant"`
	// StripeAccountTenants maps Stripe Connect account ids to tenants.
	StripeAccountTenants map[string]string `json:"stripeAccountTenants"`
	// WebhookTenants are the other webhook providers' tenant maps, by
	// provider (webhook/providers): {"github": {"accounts":
	// {"installation:123": "acme"}}, "shopify": {"accounts":
	// {"acme.myshopify.com": "acme"}}, "standard": {"accounts": {"crm":
	// "acme"}}}. A provider without one refuses every delivery it cannot
	// attribute (422 tenant_unresolved) until its accounts are mapped.
	WebhookTenants map[string]WebhookTenants `json:"webhookTenants"`
	// StripeEventBridgeSource is the partner event source of the stage's
	// Stripe event destination for Amazon EventBridge
	// (aws.partner/stripe.com/<destination id>, as the EventBridge console
	// lists it once Stripe created it). When set, the stage associates it
	// with a partner event bus of that name whose rule sends every event to
	// stripe-eventbridge (with a DLQ); unset, none of that is deployed.
	StripeEventBridgeSource string `json:"stripeEventBridgeSource"`
	// UnconsumedTopics are topics the stage deploys no consumer for on
	// purpose: cache.purge on a stage without Cloudflare, an HTTP topic
	// nobody subscribes to (yet). A production stage then synthesizes
	// without their purge zones or subscriber URL (it refuses a topic left
	// out by omission); their queues and DLQs stay, with the
	// <topic>-unconsumed alarm should anything be routed to them.
	UnconsumedTopics []string `json:"unconsumedTopics"`
	// LegacyLedgerKeysUntil (RFC 3339), for a stage that stored events
	// before ids were scoped by tenant: until then ingest also checks an
	// event's legacy key, so a retry of such an event stays a duplicate.
	// Set it to the upgrade's deploy time plus the ledger retention.
	LegacyLedgerKeysUntil string `json:"legacyLedgerKeysUntil"`
	// IncidentIndexStep walks a stage created with the earlier incident
	// indexes (status-createdAt, tenant-createdAt) to the current ones:
	// CloudFormation creates or deletes one index per update, so deploy
	// with 1, 2, 3 and then without it (docs/deploy.md#upgrading).
	IncidentIndexStep int `json:"incidentIndexStep"`
	// SubjectIndexStep walks a stage created before the subject
	// identifier indexes (subject, owner on the events and incidents
	// tables) to them, one index per table and update: deploy with 1 (a
	// stage still in the incident index upgrade: its last step), 2 (the
	// subject indexes) and then without it (docs/deploy.md#upgrading).
	SubjectIndexStep int `json:"subjectIndexStep"`
}

var (
	stageName   = regexp.MustCompile(`^[a-z][a-z0-9-]{0,15}$`)
	accountID   = regexp.MustCompile(`^[0-9]{12}$`)
	zoneID      = regexp.MustCompile(`^[0-9a-f]{32}$`)
	roleARN     = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/.+$`)
	snsTopicARN = regexp.MustCompile(`^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$`)
	email       = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)
	// stripePartnerSource is a Stripe partner event source's name.
	stripePartnerSource = regexp.MustCompile(`^aws\.partner/stripe\.com/[A-Za-z0-9_.-]{1,200}$`)
	regionName          = regexp.MustCompile(`^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]$`)
	logLevels           = []string{"DEBUG", "INFO", "WARN", "ERROR"}
)

// Prefix is the resource name prefix of the stage ("evp-<name>").
func (s Stage) Prefix() string { return "evp-" + s.Name }

// StackName is the CloudFormation stack of the stage.
func (s Stage) StackName() string { return s.Prefix() }

// Retained reports whether stateful resources survive a stack deletion.
func (s Stage) Retained() bool {
	if s.Retain != nil {
		return *s.Retain
	}
	return s.Production
}

// A Stripe burst is what the stage defaults are sized for
// (docs/scaling.md): StripeBurstRate webhook deliveries a second for
// minutes on end (a renewal run: every subscription due at once brings its
// invoice and payment events), each holding the webhook and then ingest
// for the Stripe ack's 99th percentile by the latency model (docs/cost.md,
// 268 ms measured; StripeAckP99 rounds it up).
const (
	StripeBurstRate = 500
	StripeAckP99    = 300 * time.Millisecond
)

// burstConcurrency is the executions a function needs to take
// StripeBurstRate requests a second that each hold it for StripeAckP99.
var burstConcurrency = int(math.Ceil(StripeBurstRate * StripeAckP99.Seconds()))

// RecommendedReservations is what ReserveConcurrency reserves: ingest and
// the webhook keep the executions a Stripe burst needs when consumers or a
// replay scale out (each burstConcurrency: 500 requests a second, 300 ms
// each at the 99th percentile), the admin API and the sweepers stay
// reachable in an incident.
var RecommendedReservations = map[string]int{"ingest": burstConcurrency, "webhook-stripe": burstConcurrency, "admin-api": 10, "sweeper": 3, "jobs-sweep": 2}

// UnreservedMinimum is the part of an account's concurrency AWS never lets
// functions reserve.
const UnreservedMinimum = 100

// Reservation is the reserved concurrency of the function (its name under
// the stage prefix); 0 means none.
func (s Stage) Reservation(function string) int {
	if n, ok := s.ReservedConcurrency[function]; ok {
		return n
	}
	if s.ReserveConcurrency != nil && *s.ReserveConcurrency {
		return RecommendedReservations[function]
	}
	return 0
}

// Reservations are the stage's reserved concurrency by function.
func (s Stage) Reservations() map[string]int {
	out := map[string]int{}
	for _, m := range []map[string]int{RecommendedReservations, s.ReservedConcurrency} {
		for fn := range m {
			if n := s.Reservation(fn); n > 0 {
				out[fn] = n
			}
		}
	}
	return out
}

// RequiredConcurrencyQuota is the account concurrency quota the stage
// needs: its reservations plus the unreserved minimum (0 when it reserves
// nothing: any account deploys it).
func (s Stage) RequiredConcurrencyQuota() int {
	total := 0
	for _, n := range s.Reservations() {
		total += n
	}
	if total == 0 {
		return 0
	}
	return total + UnreservedMinimum
}

// ConcurrencyNote says what the stage reserves and the account
// concurrency quota that needs (printed at synth).
func (s Stage) ConcurrencyNote() string {
	q := s.RequiredConcurrencyQuota()
	if q == 0 {
		return fmt.Sprintf("stage %s reserves no concurrency: any account's Lambda concurrency quota deploys it", s.Name)
	}
	var parts []string
	res := s.Reservations()
	for _, fn := range sortedKeys(res) {
		parts = append(parts, fmt.Sprintf("%s %d", fn, res[fn]))
	}
	return fmt.Sprintf("stage %s reserves %d concurrent executions (%s): the account's Lambda concurrent executions quota must be at least %d (AWS keeps %d unreserved; Service Quotas → AWS Lambda → Concurrent executions)",
		s.Name, q-UnreservedMinimum, strings.Join(parts, ", "), q, UnreservedMinimum)
}

// AlarmDestinations counts where alarms go besides the alert topic itself.
func (s Stage) AlarmDestinations() int {
	n := len(s.AlarmEmails) + len(s.AlarmTopicARNs) + len(s.AlarmHTTPSEndpoints)
	if s.AlarmEmail != "" {
		n++
	}
	return n
}

// Emails is every alarm e-mail address.
func (s Stage) Emails() []string {
	if s.AlarmEmail == "" {
		return s.AlarmEmails
	}
	return append([]string{s.AlarmEmail}, s.AlarmEmails...)
}

// Unconsumed reports whether the stage lists the topic in
// unconsumedTopics: it deploys no consumer for it on purpose.
func (s Stage) Unconsumed(topic string) bool { return contains(s.UnconsumedTopics, topic) }

// HasPurgeZones reports whether the cache purge consumer has any zone.
func (s Stage) HasPurgeZones() bool { return len(s.PurgeZones) > 0 || s.PurgeDefaultZone != "" }

// ParamPrefix is the SSM parameter path the operator CLI reads a stage from.
func (s Stage) ParamPrefix() string { return "/evp/" + s.Name }

// Lookup reads one context value (construct.Node().TryGetContext).
type Lookup func(key string) any

// LoadStage resolves the stage from context: the name from CtxStage, its
// settings from CtxStages, then single-key overrides, then defaults; and
// validates the result.
func LoadStage(get Lookup) (Stage, error) {
	name := DefaultStage
	if v, ok := get(CtxStage).(string); ok && strings.TrimSpace(v) != "" {
		name = strings.TrimSpace(v)
	}
	var s Stage
	if all := get(CtxStages); all != nil {
		stages, err := asObject(all)
		if err != nil {
			return s, fmt.Errorf("context %s: %w", CtxStages, err)
		}
		if raw, ok := stages[name]; ok {
			if err := decodeStrict(raw, &s); err != nil {
				return s, fmt.Errorf("context %s.%s: %w", CtxStages, name, err)
			}
		}
	}
	if file, ok := get(CtxStageFile).(string); ok && strings.TrimSpace(file) != "" {
		raw, err := os.ReadFile(strings.TrimSpace(file))
		if err != nil {
			return s, fmt.Errorf("context %s: %w", CtxStageFile, err)
		}
		// The file's keys replace cdk.json's, one by one.
		var settings map[string]any
		if err := json.Unmarshal(raw, &settings); err != nil {
			return s, fmt.Errorf("stage file %s: %w", file, err)
		}
		if err := decodeStrict(settings, &s); err != nil {
			return s, fmt.Errorf("stage file %s: %w", file, err)
		}
	}
	s.Name = name
	if err := s.applyOverrides(get); err != nil {
		return s, err
	}
	s.applyDefaults()
	return s, s.Validate()
}

// applyOverrides lets every setting be given on the command line, where
// context values are strings: JSON for lists and maps, plain text otherwise
// (a comma-separated list is accepted for producerPrincipals).
func (s *Stage) applyOverrides(get Lookup) error {
	var errs []error
	set := func(key string, apply func(string) error) {
		v := get(key)
		if v == nil {
			return
		}
		str, ok := v.(string)
		if !ok { // typed value (from a context file): reuse JSON decoding
			b, _ := json.Marshal(v)
			str = string(b)
			if strings.HasPrefix(str, `"`) {
				_ = json.Unmarshal(b, &str)
			}
		}
		if err := apply(strings.TrimSpace(str)); err != nil {
			errs = append(errs, fmt.Errorf("context %s: %w", key, err))
		}
	}
	boolPtr := func(dst **bool) func(string) error {
		return func(v string) error {
			b, err := strconv.ParseBool(v)
			*dst = &b
			return err
		}
	}
	intVal := func(dst *int) func(string) error {
		return func(v string) error {
			i, err := strconv.Atoi(v)
			*dst = i
			return err
		}
	}
	strVal := func(dst *string) func(string) error {
		return func(v string) error { *dst = v; return nil }
	}
	// mapVal replaces the map: decoding into the file's map merged them,
	// so an override could never drop an entry (a subscriber, a zone).
	mapVal := func(dst *map[string]string) func(string) error {
		return func(v string) error {
			*dst = nil
			return json.Unmarshal([]byte(v), dst)
		}
	}
	// listVal takes a JSON list or a comma-separated one.
	listVal := func(dst *[]string) func(string) error {
		return func(v string) error {
			if strings.HasPrefix(v, "[") {
				return json.Unmarshal([]byte(v), dst)
			}
			*dst = nil
			for p := range strings.SplitSeq(v, ",") {
				if p = strings.TrimSpace(p); p != "" {
					*dst = append(*dst, p)
				}
			}
			return nil
		}
	}
	set("production", func(v string) error {
		b, err := strconv.ParseBool(v)
		s.Production = b
		return err
	})
	set("account", strVal(&s.Account))
	set("region", strVal(&s.Region))
	set("retain", boolPtr(&s.Retain))
	set("logRetentionDays", intVal(&s.LogRetentionDays))
	set("logLevel", strVal(&s.LogLevel))
	set("alarmEmail", strVal(&s.AlarmEmail))
	set("alarmEmails", listVal(&s.AlarmEmails))
	set("alarmTopicArns", listVal(&s.AlarmTopicARNs))
	set("alarmHttpsEndpoints", listVal(&s.AlarmHTTPSEndpoints))
	set("producerPrincipals", listVal(&s.ProducerPrincipals))
	set("reserveConcurrency", boolPtr(&s.ReserveConcurrency))
	set("reservedConcurrency", func(v string) error {
		s.ReservedConcurrency = nil
		return json.Unmarshal([]byte(v), &s.ReservedConcurrency)
	})
	set("ledgerRetentionDays", intVal(&s.LedgerRetentionDays))
	set("apiRateLimit", intVal(&s.APIRateLimit))
	set("apiBurstLimit", intVal(&s.APIBurstLimit))
	set("subscribers", mapVal(&s.Subscribers))
	set("purgeZones", mapVal(&s.PurgeZones))
	set("purgeDefaultZone", strVal(&s.PurgeDefaultZone))
	set("purgeRate", intVal(&s.PurgeRate))
	set("purgeProducerPrincipals", listVal(&s.PurgeProducerPrincipals))
	set("stripeDefaultTenant", strVal(&s.StripeDefaultTenant))
	set("stripeAccountTenants", mapVal(&s.StripeAccountTenants))
	set("stripeEventBridgeSource", strVal(&s.StripeEventBridgeSource))
	set("webhookTenants", func(v string) error {
		s.WebhookTenants = nil
		return json.Unmarshal([]byte(v), &s.WebhookTenants)
	})
	set("unconsumedTopics", listVal(&s.UnconsumedTopics))
	set("legacyLedgerKeysUntil", strVal(&s.LegacyLedgerKeysUntil))
	set("incidentIndexStep", intVal(&s.IncidentIndexStep))
	set("subjectIndexStep", intVal(&s.SubjectIndexStep))
	return errors.Join(errs...)
}

func (s *Stage) applyDefaults() {
	if s.LogRetentionDays == 0 {
		s.LogRetentionDays = 14
		if s.Production {
			s.LogRetentionDays = 90
		}
	}
	if s.LogLevel == "" {
		s.LogLevel = "INFO"
	}
	s.LogLevel = strings.ToUpper(s.LogLevel)
	if s.LedgerRetentionDays == 0 {
		s.LedgerRetentionDays = 14
	}
	if s.APIRateLimit == 0 {
		s.APIRateLimit = StripeBurstRate
	}
	if s.APIBurstLimit == 0 {
		s.APIBurstLimit = 2 * StripeBurstRate
	}
	if s.PurgeRate == 0 {
		s.PurgeRate = 4
	}
}

// WebhookTenants is one provider's tenant map: its default tenant and its
// accounts' (kept in SSM, like Stripe's Connect accounts).
type WebhookTenants struct {
	Default  string            `json:"default"`
	Accounts map[string]string `json:"accounts"`
}

// Tenants is a provider's tenant map on the stage: Stripe's from
// stripeDefaultTenant and stripeAccountTenants, the others' from
// webhookTenants.
func (s Stage) Tenants(provider string) WebhookTenants {
	if provider == stripe.Source {
		return WebhookTenants{Default: s.StripeDefaultTenant, Accounts: s.StripeAccountTenants}
	}
	return s.WebhookTenants[provider]
}

// Validate checks the stage settings.
func (s Stage) Validate() error {
	var errs []error
	for _, name := range sortedKeys(s.WebhookTenants) {
		if _, ok := providers.Of(name); !ok || name == stripe.Source {
			errs = append(errs, fmt.Errorf("stage %s: webhookTenants names %q, which is not a webhook provider other than stripe (stripeDefaultTenant and stripeAccountTenants are Stripe's)", s.Name, name))
			continue
		}
		t := s.WebhookTenants[name]
		if err := (webhook.TenantMap{Default: t.Default, Accounts: t.Accounts}).Validate(); err != nil {
			errs = append(errs, fmt.Errorf("stage %s: webhookTenants.%s: %w", s.Name, name, err))
		}
	}
	if src := s.StripeEventBridgeSource; src != "" && !stripePartnerSource.MatchString(src) {
		errs = append(errs, fmt.Errorf("stage %s: stripeEventBridgeSource %q is not a Stripe partner event source (aws.partner/stripe.com/<destination id>)", s.Name, src))
	}
	if !stageName.MatchString(s.Name) {
		errs = append(errs, fmt.Errorf("stage %q: must be lowercase letters, digits and hyphens, at most 16 characters, starting with a letter", s.Name))
	}
	if s.Account != "" && !accountID.MatchString(s.Account) {
		errs = append(errs, fmt.Errorf("stage %s: account %q is not a 12-digit AWS account id", s.Name, s.Account))
	}
	if _, ok := retentionDays[s.LogRetentionDays]; !ok {
		errs = append(errs, fmt.Errorf("stage %s: logRetentionDays %d is not a CloudWatch Logs retention (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)", s.Name, s.LogRetentionDays))
	}
	if !contains(logLevels, s.LogLevel) {
		errs = append(errs, fmt.Errorf("stage %s: logLevel %q must be one of %v", s.Name, s.LogLevel, logLevels))
	}
	for _, e := range s.Emails() {
		if !email.MatchString(e) {
			errs = append(errs, fmt.Errorf("stage %s: alarmEmail %q is not an e-mail address", s.Name, e))
		}
	}
	for _, a := range s.AlarmTopicARNs {
		if !snsTopicARN.MatchString(a) {
			errs = append(errs, fmt.Errorf("stage %s: alarmTopicArns %q is not an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>)", s.Name, a))
		}
	}
	for _, u := range s.AlarmHTTPSEndpoints {
		if !strings.HasPrefix(u, "https://") {
			errs = append(errs, fmt.Errorf("stage %s: alarmHttpsEndpoints %q must be https://", s.Name, u))
		}
	}
	for fn, n := range s.ReservedConcurrency {
		if n < 0 || n > 10000 {
			errs = append(errs, fmt.Errorf("stage %s: reservedConcurrency of %s is %d: want 0 (none) .. 10000", s.Name, fn, n))
		}
	}
	if s.Production {
		if s.AlarmDestinations() == 0 {
			errs = append(errs, fmt.Errorf("stage %s is a production stage: its alarms must reach someone — set alarmEmail (or alarmEmails), alarmTopicArns or alarmHttpsEndpoints (copy %s to infra/cdk/stages/%s.json and fill it in)", s.Name, ExampleStageFile, s.Name))
		}
		if s.Account == "" || s.Region == "" {
			errs = append(errs, fmt.Errorf("stage %s is a production stage: pin it to its AWS account and region (account, region) so a wrong profile cannot deploy it elsewhere (copy %s to infra/cdk/stages/%s.json)", s.Name, ExampleStageFile, s.Name))
		}
	}
	if s.Region != "" && !regionName.MatchString(s.Region) {
		errs = append(errs, fmt.Errorf("stage %s: region %q is not an AWS region name", s.Name, s.Region))
	}
	for _, p := range s.ProducerPrincipals {
		if !accountID.MatchString(p) && !roleARN.MatchString(p) {
			errs = append(errs, fmt.Errorf("stage %s: producer principal %q must be an IAM role/user ARN or a 12-digit account id", s.Name, p))
		}
	}
	if s.LedgerRetentionDays < 7 {
		errs = append(errs, fmt.Errorf("stage %s: ledgerRetentionDays %d must be at least 7 so provider retries still dedupe", s.Name, s.LedgerRetentionDays))
	}
	if s.LegacyLedgerKeysUntil != "" {
		if _, err := time.Parse(time.RFC3339, s.LegacyLedgerKeysUntil); err != nil {
			errs = append(errs, fmt.Errorf("stage %s: legacyLedgerKeysUntil %q is not an RFC 3339 time", s.Name, s.LegacyLedgerKeysUntil))
		}
	}
	if s.IncidentIndexStep < 0 || s.IncidentIndexStep > 3 {
		errs = append(errs, fmt.Errorf("stage %s: incidentIndexStep %d must be 1, 2 or 3 during an upgrade, else unset", s.Name, s.IncidentIndexStep))
	}
	if s.SubjectIndexStep < 0 || s.SubjectIndexStep > 2 {
		errs = append(errs, fmt.Errorf("stage %s: subjectIndexStep %d must be 1 or 2 during an upgrade, else unset", s.Name, s.SubjectIndexStep))
	}
	if s.APIRateLimit < 1 || s.APIBurstLimit < 1 {
		errs = append(errs, fmt.Errorf("stage %s: apiRateLimit and apiBurstLimit must be positive", s.Name))
	}
	for _, p := range s.PurgeProducerPrincipals {
		if !accountID.MatchString(p) && !roleARN.MatchString(p) {
			errs = append(errs, fmt.Errorf("stage %s: purge producer principal %q must be an IAM role/user ARN or a 12-digit account id", s.Name, p))
		}
	}
	if s.PurgeRate < 1 || s.PurgeRate > 100 {
		errs = append(errs, fmt.Errorf("stage %s: purgeRate %d must be 1..100 calls a second", s.Name, s.PurgeRate))
	}
	for tenant, zone := range s.PurgeZones {
		if !envelope.ValidTenant(tenant) || !zoneID.MatchString(zone) {
			errs = append(errs, fmt.Errorf("stage %s: purge zone %q → %q must map a tenant id to a Cloudflare zone id (32 hex digits)", s.Name, tenant, zone))
		}
	}
	if s.PurgeDefaultZone != "" && !zoneID.MatchString(s.PurgeDefaultZone) {
		errs = append(errs, fmt.Errorf("stage %s: purgeDefaultZone %q is not a Cloudflare zone id (32 hex digits)", s.Name, s.PurgeDefaultZone))
	}
	for topic, u := range s.Subscribers {
		if !strings.HasPrefix(u, "https://") {
			errs = append(errs, fmt.Errorf("stage %s: subscriber URL of %s must be https:// (got %q)", s.Name, topic, u))
		}
	}
	return errors.Join(errs...)
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// asObject turns a context value (a decoded JSON object from cdk.json, or a
// JSON string from -c) into a map.
func asObject(v any) (map[string]any, error) {
	switch t := v.(type) {
	case map[string]any:
		return t, nil
	case string:
		var m map[string]any
		if err := json.Unmarshal([]byte(t), &m); err != nil {
			return nil, fmt.Errorf("not a JSON object: %w", err)
		}
		return m, nil
	default:
		return nil, fmt.Errorf("not an object (%T)", v)
	}
}

// decodeStrict re-encodes a context value and decodes it into dst,
// rejecting unknown keys so a typo in cdk.json fails the synth.
func decodeStrict(v any, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	return dec.Decode(dst)
}

// deliversToSubscriber reports whether a topic's consumer kind delivers to
// a subscriber URL the stage sets (consumerfn.Kind.Subscriber: HTTP).
func deliversToSubscriber(tp topology.Topic) bool {
	k, _ := consumerkinds.Of(tp.Consumer)
	return k.Subscriber != ""
}

// CheckTopology validates the stage against the topology it deploys:
// subscriber URLs name HTTP topics, unconsumedTopics name topics whose
// consumer the stage configures (an HTTP or the purge topic) and that it
// does not configure as well, and a production stage configures every
// HTTP topic's subscriber and the purge zones unless it lists the topic as
// unconsumed (elsewhere a topic without them is deployed unconsumed and
// alarmed, so a fresh dev stage deploys as is).
func (s Stage) CheckTopology(top topology.Topology) error {
	var errs []error
	for _, topic := range sortedKeys(s.Subscribers) {
		tp, ok := top.Topic(topic)
		if !ok || !deliversToSubscriber(tp) {
			errs = append(errs, fmt.Errorf("stage %s: subscriber for %q, which is not an HTTP topic of the topology", s.Name, topic))
		}
	}
	for _, topic := range s.UnconsumedTopics {
		tp, ok := top.Topic(topic)
		switch {
		case !ok || (!deliversToSubscriber(tp) && tp.Consumer != topology.ConsumerPurge):
			errs = append(errs, fmt.Errorf("stage %s: unconsumedTopics names %q, which is not an HTTP topic or the purge topic of the topology (their consumers need the stage's settings; the others are always deployed)", s.Name, topic))
		case s.Subscribers[topic] != "":
			errs = append(errs, fmt.Errorf("stage %s: %s is in unconsumedTopics and has a subscriber URL: drop one", s.Name, topic))
		case tp.Consumer == topology.ConsumerPurge && s.HasPurgeZones():
			errs = append(errs, fmt.Errorf("stage %s: %s is in unconsumedTopics and the stage names Cloudflare zones (purgeZones, purgeDefaultZone): drop one", s.Name, topic))
		}
	}
	if s.Production {
		for _, tp := range top.Topics {
			if s.Unconsumed(tp.Name) {
				continue
			}
			if tp.Consumer == topology.ConsumerPurge && !s.HasPurgeZones() {
				errs = append(errs, fmt.Errorf("stage %s is a production stage: give the cache purge service its Cloudflare zones (purgeZones or purgeDefaultZone; copy %s to infra/cdk/stages/%s.json and fill it in), or list %s in unconsumedTopics to deploy without it", s.Name, ExampleStageFile, s.Name, tp.Name))
			}
			if deliversToSubscriber(tp) && s.Subscribers[tp.Name] == "" {
				errs = append(errs, fmt.Errorf("stage %s is a production stage: set the subscriber URL of %s (subscribers; copy %s to infra/cdk/stages/%s.json and fill it in, or -c subscribers='{\"%s\":\"https://…\"}'), or list it in unconsumedTopics to deploy it without a consumer", s.Name, tp.Name, ExampleStageFile, s.Name, tp.Name))
			}
		}
	}
	return errors.Join(errs...)
}
