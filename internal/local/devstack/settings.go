package devstack

import (
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/siteswarm/eventplatform/internal/devapi"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/observe/trace"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
	"github.com/siteswarm/eventplatform/internal/wire/sweeperfn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// Settings the local stack itself reads. Functions read their own (the
// same names their Lambda reads) from Stack.Settings.
const (
	// SettingStripeSecret is the webhook signing secret (comma-separated
	// for several, as during a rotation); the first one signs `evp stripe
	// send` events.
	SettingStripeSecret = webhookfn.EnvSecret
	// SettingAdminKey is the admin API's bearer key.
	SettingAdminKey = adminfn.EnvKey
	// SettingSweepEvery is the sweeper's schedule (a Go duration; `evp dev
	// --sweep-every` sets it).
	SettingSweepEvery = sweeperfn.SettingLocalEvery
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
	DefaultStripeSecret = devapi.DefaultStripeSecret
	DefaultAdminKey     = devapi.DefaultAdminKey
)

// Defaults are the settings a stack has when neither the environment nor
// Options.Settings give them.
// Every provider's signing secret defaults to its declaration's local
// secret (GITHUB_WEBHOOK_SECRET, …; Stripe's is DefaultStripeSecret).
func Defaults() map[string]string {
	out := map[string]string{
		SettingStripeSecret: DefaultStripeSecret,
		SettingAdminKey:     DefaultAdminKey,
	}
	for _, d := range providers.All() {
		if v := webhookfn.VarsOf(d).Secret; out[v] == "" {
			out[v] = d.Local.Secret
		}
	}
	return out
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

// env is a function's environment in the local stack: the settings the
// stack decides from its resources (table names, queue URLs, …) over the
// stack's settings, read under the names the Lambda reads, so any of the
// function's tunables can be set exactly as on Lambda.
func (s *Stack) env(resources map[string]string) *envconf.Reader {
	return layered(resources, s.Settings, nil)
}

// runtime is a function's runtime in the local stack: the stack's log with
// the function's name, EMF metrics into the stack's metric store (as
// CloudWatch Logs extracts them on a stage) and as debug log lines.
func (s *Stack) runtime(function string) wire.Runtime {
	// The stack's metric store takes every line too (the console's
	// delivery figures read it as CloudWatch's).
	if s.metrics != nil {
		return wire.Runtime{Log: s.Log, Metrics: &metric.Emitter{W: io.MultiWriter(s.metrics, s.Metrics), Dimensions: map[string]string{metric.DimensionStage: s.Resources.Prefix}}}.Named(function)
	}
	return wire.Runtime{Log: s.Log, Metrics: &metric.Emitter{W: io.MultiWriter(logWriter{s}, s.Metrics)}}.Named(function)
}

// logWriter sends EMF lines to the stack's log at debug level.
type logWriter struct{ s *Stack }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.Log.Debug("emf", "line", string(p))
	return len(p), nil
}

// StripeSecrets are the active webhook signing secrets.
func (s *Stack) StripeSecrets() []string { return s.Settings.List(SettingStripeSecret) }

// AdminKey is the admin API bearer key.
func (s *Stack) AdminKey() string { return s.Settings.String(SettingAdminKey, DefaultAdminKey) }
