package platform

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/topology"
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
)

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
	// AlarmEmail, when set, subscribes an address to the alert topic.
	AlarmEmail string `json:"alarmEmail"`
	// ProducerPrincipals may invoke the ingest function directly, besides
	// the webhook adapters: IAM role ARNs or 12-digit account ids.
	ProducerPrincipals []string `json:"producerPrincipals"`
	// ReserveConcurrency reserves concurrency for ingest, the webhook, the
	// sweeper and the admin API. Off by default outside production: fresh
	// and sandbox accounts often have a concurrency quota too small to
	// reserve anything.
	ReserveConcurrency *bool `json:"reserveConcurrency"`
	// LedgerRetentionDays is how long ledger items (the dedupe window) and
	// claim-checked payloads are kept (at least 7).
	LedgerRetentionDays int `json:"ledgerRetentionDays"`
	// APIRateLimit and APIBurstLimit throttle the HTTP API's default stage
	// (requests per second, burst).
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
}

var (
	stageName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,15}$`)
	accountID = regexp.MustCompile(`^[0-9]{12}$`)
	zoneID    = regexp.MustCompile(`^[0-9a-f]{32}$`)
	roleARN   = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/.+$`)
	logLevels = []string{"DEBUG", "INFO", "WARN", "ERROR"}
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

// Reserved reports whether functions get reserved concurrency.
func (s Stage) Reserved() bool {
	if s.ReserveConcurrency != nil {
		return *s.ReserveConcurrency
	}
	return s.Production
}

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
	mapVal := func(dst *map[string]string) func(string) error {
		return func(v string) error { return json.Unmarshal([]byte(v), dst) }
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
	set("producerPrincipals", func(v string) error {
		if strings.HasPrefix(v, "[") {
			return json.Unmarshal([]byte(v), &s.ProducerPrincipals)
		}
		s.ProducerPrincipals = nil
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				s.ProducerPrincipals = append(s.ProducerPrincipals, p)
			}
		}
		return nil
	})
	set("reserveConcurrency", boolPtr(&s.ReserveConcurrency))
	set("ledgerRetentionDays", intVal(&s.LedgerRetentionDays))
	set("apiRateLimit", intVal(&s.APIRateLimit))
	set("apiBurstLimit", intVal(&s.APIBurstLimit))
	set("subscribers", mapVal(&s.Subscribers))
	set("purgeZones", mapVal(&s.PurgeZones))
	set("purgeDefaultZone", strVal(&s.PurgeDefaultZone))
	set("purgeRate", intVal(&s.PurgeRate))
	set("purgeProducerPrincipals", func(v string) error {
		if strings.HasPrefix(v, "[") {
			return json.Unmarshal([]byte(v), &s.PurgeProducerPrincipals)
		}
		s.PurgeProducerPrincipals = nil
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				s.PurgeProducerPrincipals = append(s.PurgeProducerPrincipals, p)
			}
		}
		return nil
	})
	set("stripeDefaultTenant", strVal(&s.StripeDefaultTenant))
	set("stripeAccountTenants", mapVal(&s.StripeAccountTenants))
	set("legacyLedgerKeysUntil", strVal(&s.LegacyLedgerKeysUntil))
	set("incidentIndexStep", intVal(&s.IncidentIndexStep))
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
		s.APIRateLimit = 50
	}
	if s.APIBurstLimit == 0 {
		s.APIBurstLimit = 100
	}
	if s.PurgeRate == 0 {
		s.PurgeRate = 4
	}
}

// Validate checks the stage settings.
func (s Stage) Validate() error {
	var errs []error
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
	if s.AlarmEmail != "" && !strings.Contains(s.AlarmEmail, "@") {
		errs = append(errs, fmt.Errorf("stage %s: alarmEmail %q is not an e-mail address", s.Name, s.AlarmEmail))
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

// CheckTopology validates the stage against the topology it deploys:
// subscriber URLs name HTTP topics, and a production stage configures every
// HTTP topic's subscriber (elsewhere a topic without one is deployed
// unconsumed and alarmed, so a fresh dev stage deploys as is).
func (s Stage) CheckTopology(top topology.Topology) error {
	var errs []error
	for _, topic := range sortedKeys(s.Subscribers) {
		tp, ok := top.Topic(topic)
		if !ok || tp.Consumer != topology.ConsumerHTTP {
			errs = append(errs, fmt.Errorf("stage %s: subscriber for %q, which is not an HTTP topic of the topology", s.Name, topic))
		}
	}
	if s.Production {
		for _, tp := range top.Topics {
			if tp.Consumer == topology.ConsumerPurge && !s.HasPurgeZones() {
				errs = append(errs, fmt.Errorf("stage %s is a production stage: give the cache purge service its Cloudflare zones (evp:stages.%s.purgeZones or purgeDefaultZone)", s.Name, s.Name))
			}
			if tp.Consumer == topology.ConsumerHTTP && s.Subscribers[tp.Name] == "" {
				errs = append(errs, fmt.Errorf("stage %s is a production stage: set the subscriber URL of %s (evp:stages.%s.subscribers in cdk.json, or -c subscribers='{\"%s\":\"https://…\"}')", s.Name, tp.Name, s.Name, tp.Name))
			}
		}
	}
	return errors.Join(errs...)
}
