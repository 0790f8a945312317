package devstack

import (
	"maps"
	"slices"
	"strings"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/trace"
)

// Settings the local stack itself reads. Functions read their own (the
// same names their Lambda reads) from Stack.Settings.
const (
	// SettingStripeSecret is the webhook signing secret (comma-separated
	// for several, as during a rotation); the first one signs `evp stripe
	// send` events.
	SettingStripeSecret = "STRIPE_WEBHOOK_SECRET"
	// SettingAdminKey is the admin API's bearer key.
	SettingAdminKey = "ADMIN_API_KEY"
	// SettingSweepEvery is the sweeper's schedule (a Go duration; `evp dev
	// --sweep-every` sets it).
	SettingSweepEvery = "SWEEP_EVERY"
	// SettingEndpointURL points the stack at real endpoints (LocalStack, a
	// sandbox account's VPC endpoints) instead of the embedded emulators;
	// the per-service forms (AWS_ENDPOINT_URL_DYNAMODB, …) count too.
	SettingEndpointURL = "AWS_ENDPOINT_URL"
	// SettingXRayDaemon enables tracing: each invocation records a segment,
	// as Lambda's active tracing does.
	SettingXRayDaemon = trace.EnvDaemonAddress
)

// Safe local defaults: clearly-local values, so nothing copied from a
// terminal can ever be mistaken for a production secret.
const (
	DefaultStripeSecret = "whsec_local_dev_secret"
	DefaultAdminKey     = "dev-admin-key"
)

// Defaults are the settings a stack has when neither the environment nor
// Options.Settings give them.
func Defaults() map[string]string {
	return map[string]string{
		SettingStripeSecret: DefaultStripeSecret,
		SettingAdminKey:     DefaultAdminKey,
	}
}

// layered reads overrides first (command-line flags), then the
// environment, then the defaults. An empty value counts as unset, as
// everywhere in envconf.
func layered(overrides map[string]string, env *envconf.Reader, defaults map[string]string) *envconf.Reader {
	overrides, defaults = maps.Clone(overrides), maps.Clone(defaults)
	set := func(v string, ok bool) bool { return ok && strings.TrimSpace(v) != "" }
	return &envconf.Reader{Lookup: func(k string) (string, bool) {
		if v, ok := overrides[k]; set(v, ok) {
			return v, true
		}
		if v, ok := env.Lookup(k); set(v, ok) {
			return v, true
		}
		v, ok := defaults[k]
		return v, ok
	}}
}

// usesEndpointOverride reports whether the settings point AWS clients at
// explicit endpoints (AWS_ENDPOINT_URL or a per-service variant for a
// service the stack provisions).
func usesEndpointOverride(r *envconf.Reader) bool {
	return slices.ContainsFunc([]string{"", "_DYNAMODB", "_SQS", "_S3", "_SNS"}, func(svc string) bool {
		return r.String(SettingEndpointURL+svc, "") != ""
	})
}

// StripeSecrets are the active webhook signing secrets.
func (s *Stack) StripeSecrets() []string { return s.Settings.List(SettingStripeSecret) }

// AdminKey is the admin API bearer key.
func (s *Stack) AdminKey() string { return s.Settings.String(SettingAdminKey, DefaultAdminKey) }
