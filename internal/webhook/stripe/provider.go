package stripe

import (
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

// Source is the producer name of Stripe events in the topology; event types
// are "stripe." + the Stripe type.
const Source = "stripe"

// Declaration is Stripe, as the platform knows it (webhook/providers).
var Declaration = webhook.Declaration{
	Name:         Source,
	Title:        "Stripe",
	Authz:        "Stripe cannot authenticate to API Gateway: every delivery is authenticated by the function, which verifies the Stripe-Signature HMAC (constant-time, 300 s tolerance) before doing anything else. The stage is throttled.",
	Endpoint:     "Stripe dashboard → Developers → Webhooks",
	Rules:        rules{},
	CheckSecrets: CheckSecrets,
	New: func(s webhook.Setup) (webhook.Provider, error) {
		p := New(s.Secrets, s.Tenants, s.Log)
		p.Now = clock.Or(s.Now)
		return p, nil
	},
	Sign: func(d webhook.Signing) map[string]string {
		return map[string]string{SignatureHeader: Sign(d.Body, d.At, d.Secret)}
	},
	Secret: webhook.SecretText{
		Description: `active Stripe endpoint signing secrets as a JSON list, e.g. ["whsec_…"]. ` +
			"Set it after the first deploy; list two during a rotation.",
		WhyNoRotation: "Stripe issues endpoint signing secrets in its dashboard; Secrets Manager cannot rotate them. Operators roll them with an overlap window (docs/deploy.md#rotation) and the webhook re-reads the list every few minutes.",
	},
	// stripe trigger's events carry no tenant metadata: the local default
	// tenant takes them; the samples' Connect account is mapped.
	Local: webhook.Local{
		Secret:  "whsec_local_dev_secret",
		Tenants: webhook.TenantMap{Default: "local", Accounts: map[string]string{"acct_1PqRsTBq2Lw7Xa1k": "initech"}},
	},
}

// Secrets is what verification needs of the signing-secret cache.
type Secrets = webhook.Secrets

// Provider is the Stripe webhook provider.
type Provider struct {
	Secrets Secrets
	// Tenants attributes events: the Connect account through Accounts, then
	// data.object.metadata.tenant_id, then Default.
	Tenants webhook.TenantMap
	// Now is the clock of the timestamp window (default time.Now).
	Now func() time.Time
	Log *slog.Logger
}

var _ webhook.Provider = (*Provider)(nil)

// New returns the Stripe provider.
func New(secrets Secrets, tenants webhook.TenantMap, log *slog.Logger) *Provider {
	return &Provider{Secrets: secrets, Tenants: tenants, Now: time.Now, Log: log}
}

// Name is the producer name, "stripe".
func (p *Provider) Name() string { return Source }

func (p *Provider) now() time.Time {
	return clock.Or(p.Now)()
}

func (p *Provider) log() *slog.Logger {
	return logging.OrDiscard(p.Log)
}
