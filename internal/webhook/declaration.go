package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

// Declaration is one webhook provider, declared once in its package
// (stripe.Declaration, github.Declaration, …) and listed once in
// webhook/providers. Everything else reads it: the ingestion core asks its
// Rules; the provider's function (webhook-<Name>: its route, secret,
// variables, outputs) is a view of it in the CDK app, the local stack and
// the wiring; `evp <Name> send` signs with Sign.
type Declaration struct {
	// Name is the provider's name: its producer's source (and Provider)
	// in the topology, the first segment of its event types
	// ("github.issues.opened"), its route /webhook/<Name>, its function
	// webhook-<Name> and the prefix of its variables (GITHUB_WEBHOOK_SECRET,
	// GITHUB_TENANT_MAP, …).
	Name string
	// Title is the provider's name as people write it ("GitHub").
	Title string
	// Authz says how the provider's deliveries are authenticated (its
	// public route has no API Gateway authorizer: cdk-nag
	// AwsSolutions-APIG4's justification); Endpoint says where an operator
	// gives the provider the route's published URL.
	Authz, Endpoint string
	// Sources: a delivery names its source in the path
	// (/webhook/<Name>/{source}); each source has its own signing secrets
	// and, through the tenant map's accounts, its own tenant. LocalSource
	// is the source the local stack configures.
	Sources     bool
	LocalSource string
	// Rules are what the core asks of the provider's events.
	Rules Rules
	// CheckSecrets refuses a list of signing secrets that cannot be the
	// provider's (an API key pasted by mistake); errors never quote one.
	CheckSecrets func([]string) error
	// New builds the provider's verifier and canonicalizer.
	New func(Setup) (Provider, error)
	// Sign signs a delivery the way the provider does: the headers it
	// carries besides the body (evp <Name> send, benchmarks, the local
	// stack's tests). Tests of verification sign with an implementation
	// of their own instead.
	Sign func(d Signing) map[string]string
	// Secret describes the provider's secret to operators: where its
	// value comes from and its stored form (the Secrets Manager secret's
	// description), and why no rotation function can rotate it.
	Secret SecretText
	// Local is what `make dev` configures for the provider unless told
	// otherwise, and what `evp <Name> send` signs with.
	Local Local
}

// SecretText is what operators read about a provider's secret.
type SecretText struct {
	// Description: what it holds and how to set it.
	Description string
	// WhyNoRotation: why Secrets Manager cannot rotate it.
	WhyNoRotation string
}

// Local is a provider's local development defaults.
type Local struct {
	// Secret is the local signing secret (the banner prints it;
	// <NAME>_WEBHOOK_SECRET overrides it).
	Secret string
	// Tenants is the local tenant map (<NAME>_TENANT_MAP overrides it):
	// the samples' accounts map to tenants, so a delivery signed outside
	// the project with the local secret is accepted as on a stage.
	Tenants TenantMap
	// Account is the account the samples come from, for a provider that
	// names it in a header (Signing.Account).
	Account string
}

// Setup is what a provider is built from.
type Setup struct {
	// Secrets are the active signing secrets (a secret.Keyring); for a
	// provider with Sources, Source returns each source's (false for a
	// source without secrets).
	Secrets Secrets
	Source  func(source string) (Secrets, bool)
	// Tenants is the trusted tenant map: the sender never picks its tenant.
	Tenants TenantMap
	// Now is the clock of timestamp windows and receipt times.
	Now func() time.Time
	Log *slog.Logger
}

// Signing is a delivery to sign (Declaration.Sign).
type Signing struct {
	Body []byte
	// Event names the event for providers whose type travels in a header
	// (GitHub's X-GitHub-Event, Shopify's X-Shopify-Topic): the event type
	// without the provider's prefix ("issues.opened", "orders.create").
	Event string
	// ID is the delivery id for providers whose id travels in a header.
	ID string
	// Account is the provider account the delivery comes from, for
	// providers that name it in a header (Shopify's shop domain).
	Account string
	Secret  string
	At      time.Time
}

// Secrets is what verification needs of the signing-secret cache
// (*secret.Keyring).
type Secrets interface {
	Active(ctx context.Context) []string
	Reload(ctx context.Context) ([]string, bool)
}

// Rules are what the platform's core asks of a provider about the events
// it verified: its idempotency key, how a redelivery is recognised as the
// same event, which entity its events are ordered by and which
// identifiers an erasure finds them by. identity, subject, ledger, the DLQ
// archiver, ingest and the job kinds read them through webhook/providers
// and never name a provider.
type Rules interface {
	// GlobalIDs reports whether the provider's event ids are unique across
	// tenants by construction (a Stripe evt_…, a GitHub delivery GUID):
	// such an event is stored under its bare id, so a redelivery lands on
	// it whatever tenant it resolves to. Otherwise ids are the sender's
	// and scoped by tenant, as internal producers' are.
	GlobalIDs() bool
	// IdentityScheme names the hashes Identity makes ("" when the
	// provider's events are identified by their content: a provider that
	// resends the same bytes).
	IdentityScheme() string
	// Identity is the hash of what never changes between the provider's
	// deliveries of one event, prefixed "<IdentityScheme>:"; false when the
	// payload is not the provider's (it is then identified by content).
	Identity(payload []byte) (string, bool)
	// Owner is the entity the payload says the event belongs to, beyond
	// its envelope subject (a Stripe invoice's customer): an erasure of
	// it finds the event. "" when none or the payload is not the
	// provider's; always a usable subject (envelope.ValidSubject).
	Owner(payload []byte) string
	// OrderingKey is the entity whose events a FIFO topic keeps in order
	// ("" : the tenant's sequence). The payload is inline.
	OrderingKey(ev envelope.Event) string
}

// ContentRules are the rules of a provider that resends an event's bytes
// unchanged and names no owner: content identity, the envelope subject as
// the ordering key. Providers embed it and override what differs.
type ContentRules struct{}

// GlobalIDs: ids are scoped by tenant unless a provider says otherwise.
func (ContentRules) GlobalIDs() bool { return false }

// IdentityScheme: identified by content.
func (ContentRules) IdentityScheme() string { return "" }

// Identity: identified by content.
func (ContentRules) Identity([]byte) (string, bool) { return "", false }

// Owner: none.
func (ContentRules) Owner([]byte) string { return "" }

// OrderingKey is the envelope subject.
func (ContentRules) OrderingKey(ev envelope.Event) string { return ev.Subject }

// SourceNamePattern is what a source in a delivery's path may be (it is a
// segment of the event types, "standard.<source>.<type>"), as errors
// quote it; ValidSourceName checks it.
const SourceNamePattern = `^[a-z][a-z0-9_]{0,31}$`

// ValidSourceName reports whether s matches SourceNamePattern. It and
// validProviderName are their regexps written out over bytes (a
// package-level regexp is compiled by every cold start of every function
// that links webhook); syntax_test.go holds each to its regexp.
func ValidSourceName(s string) bool { return lowerName(s, 32, '_') }

// validProviderName is ^[a-z][a-z0-9]{0,30}$.
func validProviderName(s string) bool { return lowerName(s, 31, 0) }

// lowerName reports whether s is 1 to n bytes: a lowercase letter, then
// lowercase letters, digits or extra (0: none).
func lowerName(s string, n int, extra byte) bool {
	if s == "" || len(s) > n || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z') && !('0' <= c && c <= '9') && (extra == 0 || c != extra) {
			return false
		}
	}
	return true
}

// Validate checks a declaration is complete.
func (d Declaration) Validate() error {
	var errs []error
	if !validProviderName(d.Name) {
		errs = append(errs, fmt.Errorf("provider %q: the name must be lowercase letters and digits (it names a route, a function and an event type prefix)", d.Name))
	}
	if d.Title == "" || d.Rules == nil || d.New == nil || d.Sign == nil || d.CheckSecrets == nil {
		errs = append(errs, fmt.Errorf("provider %q: Title, Rules, New, Sign and CheckSecrets are required", d.Name))
	}
	if d.Authz == "" || d.Endpoint == "" {
		errs = append(errs, fmt.Errorf("provider %q: how deliveries are authenticated (Authz) and where the URL goes (Endpoint) are required", d.Name))
	}
	if d.Secret.Description == "" || d.Secret.WhyNoRotation == "" {
		errs = append(errs, fmt.Errorf("provider %q: the secret's description and why it is not rotated are required", d.Name))
	}
	if d.CheckSecrets != nil && d.CheckSecrets([]string{d.Local.Secret}) != nil {
		errs = append(errs, fmt.Errorf("provider %q: the local secret is not one of the provider's", d.Name))
	}
	if err := d.Local.Tenants.Validate(); err != nil || (len(d.Local.Tenants.Accounts) == 0 && d.Local.Tenants.Default == "") {
		errs = append(errs, fmt.Errorf("provider %q: a local tenant map that names a tenant is required: %v", d.Name, err))
	}
	if d.Sources && !ValidSourceName(d.LocalSource) {
		errs = append(errs, fmt.Errorf("provider %q: a provider with sources declares its local source (%s)", d.Name, SourceNamePattern))
	}
	if !d.Sources && d.LocalSource != "" {
		errs = append(errs, fmt.Errorf("provider %q: a local source without Sources", d.Name))
	}
	return errors.Join(errs...)
}

// Path is the provider's route: /webhook/<Name>, or
// /webhook/<Name>/{source} for a provider with sources.
func (d Declaration) Path() string {
	if d.Sources {
		return "/webhook/" + d.Name + "/{source}"
	}
	return "/webhook/" + d.Name
}

// URLPath is the path a delivery is posted to: Path with source in place
// of {source} (source is ignored by a provider without sources).
func (d Declaration) URLPath(source string) string {
	if d.Sources {
		return "/webhook/" + d.Name + "/" + source
	}
	return d.Path()
}

// TypePrefix starts every event type of the provider ("github.").
func (d Declaration) TypePrefix() string { return d.Name + "." }

// Verified reports whether match accepts one of the active secrets; a miss
// against every cached secret reloads the keyring once (rate-limited by
// the keyring) and tries the fresh set, for a secret rolled moments ago.
// Every provider's verifier checks its signature through it.
func Verified(ctx context.Context, s Secrets, match func(secret string) bool) bool {
	for _, secret := range s.Active(ctx) {
		if match(secret) {
			return true
		}
	}
	fresh, changed := s.Reload(ctx)
	if !changed {
		return false
	}
	for _, secret := range fresh {
		if match(secret) {
			return true
		}
	}
	return false
}
