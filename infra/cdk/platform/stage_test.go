package platform

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func ctxOf(m map[string]any) Lookup { return func(k string) any { return m[k] } }

var testStages = map[string]any{
	"prod": map[string]any{"production": true, "account": "123456789012", "region": "eu-west-1", "alarmEmail": "ops@example.com"},
	"dev":  map[string]any{"logRetentionDays": float64(7)},
}

func TestLoadStage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		ctx   map[string]any
		check func(t *testing.T, s Stage)
	}{
		{
			name: "no stage given means dev with non-production defaults",
			ctx:  map[string]any{},
			check: func(t *testing.T, s Stage) {
				require.Equal(t, "dev", s.Name)
				require.Equal(t, "evp-dev", s.Prefix())
				require.False(t, s.Retained())
				require.Zero(t, s.RequiredConcurrencyQuota())
				require.Equal(t, 14, s.LogRetentionDays)
				require.Equal(t, "INFO", s.LogLevel)
				require.Equal(t, 14, s.LedgerRetentionDays)
				require.Equal(t, "/evp/dev", s.ParamPrefix())
			},
		},
		{
			name: "production stage from cdk.json retains data and reserves nothing unless asked",
			ctx:  map[string]any{CtxStage: "prod", CtxStages: testStages},
			check: func(t *testing.T, s Stage) {
				require.True(t, s.Production)
				require.True(t, s.Retained())
				require.Zero(t, s.RequiredConcurrencyQuota(), "a default account deploys it")
				require.Equal(t, 90, s.LogRetentionDays)
				require.Equal(t, "123456789012", s.Account)
				require.Equal(t, "ops@example.com", s.AlarmEmail)
				require.Equal(t, "evp-prod", s.StackName())
			},
		},
		{
			name: "command-line overrides win over cdk.json",
			ctx: map[string]any{
				CtxStage: "prod", CtxStages: testStages,
				"retain": "false", "alarmEmail": "pager@example.com", "logLevel": "debug",
				"producerPrincipals": "arn:aws:iam::111122223333:role/cms, 444455556666",
				"subscribers":        `{"billing.events":"https://billing.example.com/hook"}`,
			},
			check: func(t *testing.T, s Stage) {
				require.False(t, s.Retained())
				require.Equal(t, "pager@example.com", s.AlarmEmail)
				require.Equal(t, "DEBUG", s.LogLevel)
				require.Equal(t, []string{"arn:aws:iam::111122223333:role/cms", "444455556666"}, s.ProducerPrincipals)
				require.Equal(t, "https://billing.example.com/hook", s.Subscribers["billing.events"])
			},
		},
		{
			name: "the stage file's keys win over cdk.json, -c over both",
			ctx:  map[string]any{CtxStage: "prod", CtxStages: testStages, CtxStageFile: "../stages/prod.example.json", "logRetentionDays": "30"},
			check: func(t *testing.T, s Stage) {
				require.Equal(t, "eu-west-1", s.Region)
				require.Equal(t, []string{"ops@example.com", "oncall@example.com"}, s.Emails(), "cdk.json's alarmEmail stays, the file adds alarmEmails")
				require.Equal(t, 30, s.LogRetentionDays)
				require.Len(t, s.Subscribers, 4)
				require.Equal(t, 415, s.RequiredConcurrencyQuota(), "the recommended reservations (315) and the 100 AWS keeps unreserved")
				require.Contains(t, s.ConcurrencyNote(), "at least 415")
			},
		},
		{
			name: "reservations function by function win over the recommended set",
			ctx:  map[string]any{"reserveConcurrency": "true", "reservedConcurrency": `{"ingest":20,"webhook-stripe":0}`},
			check: func(t *testing.T, s Stage) {
				require.Equal(t, 20, s.Reservation("ingest"))
				require.Zero(t, s.Reservation("webhook-stripe"))
				require.Equal(t, 10, s.Reservation("admin-api"))
				require.Equal(t, 20+10+3+2+100, s.RequiredConcurrencyQuota())
			},
		},
		{
			name: "alarm destinations as lists",
			ctx: map[string]any{"alarmEmails": "a@example.com, b@example.com", "alarmTopicArns": `["arn:aws:sns:eu-west-1:123456789012:pager"]`,
				"alarmHttpsEndpoints": "https://events.pagerduty.com/integration/x/enqueue"},
			check: func(t *testing.T, s Stage) {
				require.Equal(t, 4, s.AlarmDestinations())
			},
		},
		{
			name: "an unknown stage name gets the defaults",
			ctx:  map[string]any{CtxStage: "alice", CtxStages: testStages},
			check: func(t *testing.T, s Stage) {
				require.Equal(t, "evp-alice", s.Prefix())
				require.False(t, s.Production)
				require.Equal(t, 14, s.LogRetentionDays)
			},
		},
		{
			name: "stages given as a JSON string on the command line",
			ctx:  map[string]any{CtxStage: "dev", CtxStages: `{"dev":{"logRetentionDays":30}}`},
			check: func(t *testing.T, s Stage) {
				require.Equal(t, 30, s.LogRetentionDays)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := LoadStage(ctxOf(tc.ctx))
			require.NoError(t, err)
			tc.check(t, s)
		})
	}
}

func TestLoadStageRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ctx  map[string]any
		want string
	}{
		{"bad stage name", map[string]any{CtxStage: "Prod_1"}, "lowercase"},
		{"stage name too long", map[string]any{CtxStage: "a-very-long-stage-name"}, "at most 16"},
		{"unknown key in cdk.json", map[string]any{CtxStage: "dev", CtxStages: map[string]any{"dev": map[string]any{"logRetention": 7}}}, "unknown field"},
		{"log retention CloudWatch does not offer", map[string]any{"logRetentionDays": "10"}, "logRetentionDays 10"},
		{"log level", map[string]any{"logLevel": "verbose"}, "logLevel"},
		{"ledger retention under 7 days", map[string]any{"ledgerRetentionDays": "3"}, "at least 7"},
		{"producer that is not a principal", map[string]any{"producerPrincipals": "cms"}, "producer principal"},
		{"producer wildcard", map[string]any{"producerPrincipals": "*"}, "producer principal"},
		{"plain-http subscriber", map[string]any{"subscribers": `{"billing.events":"http://x.example.com"}`}, "https"},
		{"account that is not an id", map[string]any{"account": "prod"}, "12-digit"},
		{"non-numeric override", map[string]any{"apiRateLimit": "fast"}, "apiRateLimit"},
		{"non-boolean override", map[string]any{"retain": "maybe"}, "retain"},
		{"alarm e-mail", map[string]any{"alarmEmail": "oncall"}, "alarmEmail"},
		{"alarm topic that is not an SNS ARN", map[string]any{"alarmTopicArns": "pager"}, "alarmTopicArns"},
		{"plain-http alarm endpoint", map[string]any{"alarmHttpsEndpoints": "http://hooks.example.com"}, "alarmHttpsEndpoints"},
		{"negative reservation", map[string]any{"reservedConcurrency": `{"ingest":-1}`}, "reservedConcurrency"},
		{"production alarms that reach nobody", map[string]any{"production": "true", "account": "123456789012", "region": "eu-west-1"}, "alarms must reach someone"},
		{"production alarm error names the file to copy", map[string]any{"production": "true", "account": "123456789012", "region": "eu-west-1"}, ExampleStageFile},
		{"production without its account", map[string]any{"production": "true", "alarmEmail": "a@example.com", "region": "eu-west-1"}, "pin it to its AWS account and region"},
		{"production without its region", map[string]any{"production": "true", "alarmEmail": "a@example.com", "account": "123456789012"}, "pin it to its AWS account and region"},
		{"region that is not one", map[string]any{"region": "europe"}, "region"},
		{"missing stage file", map[string]any{CtxStageFile: "no-such-stage.json"}, "no-such-stage.json"},
		{"tenants of no provider", map[string]any{"webhookTenants": `{"gitlab":{"accounts":{"1":"acme"}}}`}, `webhookTenants names "gitlab"`},
		{"stripe's tenants under webhookTenants", map[string]any{"webhookTenants": `{"stripe":{"default":"acme"}}`}, `webhookTenants names "stripe"`},
		{"provider tenant that is not one", map[string]any{"webhookTenants": `{"github":{"accounts":{"installation:1":"ACME"}}}`}, "webhookTenants.github"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := LoadStage(ctxOf(tc.ctx))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, "BillingEvents", logicalName("billing.events"))
	require.Equal(t, "CachePurge", logicalName("cache.purge"))
	require.Equal(t, "billing-events", slug("billing.events"))
	require.Equal(t, "crm-sync", slug("crm.sync"))
}

// The stage defaults take a Stripe burst (docs/scaling.md): the HTTP API
// stage lets StripeBurstRate requests a second through and twice that at
// once, and the recommended reservations give the webhook and ingest the
// executions that many requests hold at the Stripe ack's 99th percentile,
// within the account quota the stage names.
func TestStageDefaultsTakeAStripeBurst(t *testing.T) {
	t.Parallel()
	s, err := LoadStage(ctxOf(map[string]any{"reserveConcurrency": "true"}))
	require.NoError(t, err)
	require.GreaterOrEqual(t, s.APIRateLimit, StripeBurstRate, "the stage throttle passes a Stripe burst (it was 50 a second)")
	require.GreaterOrEqual(t, s.APIBurstLimit, 2*StripeBurstRate)
	need := int(float64(StripeBurstRate) * StripeAckP99.Seconds())
	for _, fn := range []string{"webhook-stripe", "ingest"} {
		require.GreaterOrEqual(t, s.Reservation(fn), need, "%s holds %d executions during a burst", fn, need)
	}
	require.Equal(t, 150+150+10+3+2+UnreservedMinimum, s.RequiredConcurrencyQuota())
	require.Contains(t, s.ConcurrencyNote(), "at least 415")
	example, err := LoadStage(ctxOf(map[string]any{CtxStage: "prod", CtxStages: testStages, CtxStageFile: "../stages/prod.example.json"}))
	require.NoError(t, err)
	require.GreaterOrEqual(t, example.APIRateLimit, StripeBurstRate, "the example production stage keeps the burst's throttle")
}
