package devstack

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// Banner writes what a developer needs to start: the URLs, the local
// webhook secret and admin key, and three commands to try. A secret the
// developer set themselves is shown masked (it may be a real one); the
// local defaults are shown in full because they are the point.
func (s *Stack) Banner(w io.Writer) {
	u := s.URL()
	where := "embedded emulators (DynamoDB, SQS, SNS, S3), in memory"
	if s.Emulators != nil && s.Emulators.DynamoKind == awslocal.DynamoLocal {
		where = "emulators in memory (DynamoDB Local for DynamoDB; SQS, SNS, S3 embedded)"
	}
	if s.Target == TargetAWS {
		where = fmt.Sprintf("real endpoints, resources prefixed %q (left in place on exit)", s.Resources.Prefix)
	}
	evp := "go run ./cmd/evp"
	urlFlag := ""
	if u != "http://"+DefaultAddr {
		urlFlag = " --url " + u
	}

	fmt.Fprintf(w, "\nEvent platform running at %s on %s\n\n", u, where)
	// One row per provider (webhook/providers): its route and the secret
	// a delivery is signed with (`evp <provider> send` signs with it).
	var rows [][2]string
	for _, d := range providers.All() {
		v := webhookfn.VarsOf(d)
		secret := d.Local.Secret
		if secrets := s.Settings.List(v.Secret); len(secrets) > 0 {
			secret = secrets[0]
		}
		rows = append(rows, [2]string{d.Title + " webhook", fmt.Sprintf("POST %s%s  (%s %s)", u, WebhookPath(d), v.Secret, s.shown(v.Secret, secret))})
	}
	rows = append(rows, [][2]string{
		{"Admin API", fmt.Sprintf("%s/admin/…  (Authorization: Bearer %s)", u, s.shown(SettingAdminKey, s.AdminKey()))},
		{"Console", fmt.Sprintf("%s/console  (sign in with the admin key)", u)},
		{"Lambda Invoke", fmt.Sprintf("POST %s/2015-03-31/functions/{name}/invocations", u)},
		{"Step Functions", fmt.Sprintf("%s%s  (the replay state machine %s; StartExecution, DescribeExecution, GetExecutionHistory)", u, StepFunctionsPath, ReplayStateMachineARN())},
		{"CloudWatch", fmt.Sprintf("%s%s  (GetMetricData over the functions' EMF metrics: the console's delivery figures)", u, awslocal.MetricsPath)},
		{"Deliveries", fmt.Sprintf("%s%s  (the local HTTP subscriber)", u, SinkPath)},
		{"Jobs", fmt.Sprintf("%s/admin/jobs  (durable jobs; `%s jobs list`)", u, evp)},
		{"Stripe API", fmt.Sprintf("%s%s/v1/events  (local stand-in reconciliation pages; POST adds an event)", u, StripeAPIPath)},
		{"Health", u + "/healthz"},
	}...)
	if buckets := strings.Join(s.Buckets(), ", "); s.Emulators != nil {
		rows = append(rows[:len(rows)-1], [2]string{"S3", fmt.Sprintf("%s%s/  (path-style S3 API; versioned buckets: %s)", u, S3Path, buckets)}, rows[len(rows)-1])
	} else {
		rows = append(rows[:len(rows)-1], [2]string{"S3", "buckets " + buckets + " (real S3)"}, rows[len(rows)-1])
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-24s %s\n", r[0], r[1])
	}
	if names := s.FunctionNames(); len(names) > 0 {
		fmt.Fprintf(w, "  %-24s %s\n", "Functions", strings.Join(names, ", "))
	}
	key := s.shown(SettingAdminKey, s.AdminKey())
	fmt.Fprintf(w, "\nTry:\n")
	fmt.Fprintf(w, "  1. send a signed Stripe event; it is delivered to the local subscriber\n       %s stripe send invoice.paid%s\n", evp, urlFlag)
	fmt.Fprintf(w, "  2. see what the subscriber received\n       curl -s %s%s\n", u, SinkPath)
	fmt.Fprintf(w, "  3. follow it through the ledger and outbox (the event id step 1 printed)\n       curl -s -H 'Authorization: Bearer %s' %s/admin/events/EVENT_ID\n", key, u)
	fmt.Fprintf(w, "\nStripe CLI: stripe listen --forward-to %s/webhook/stripe (then set STRIPE_WEBHOOK_SECRET to its whsec_…)\n", strings.TrimPrefix(u, "http://"))
	fmt.Fprintf(w, "Ctrl-C stops everything.\n\n")
}

// Buckets names the stack's buckets (each versioned, as deployed).
func (s *Stack) Buckets() []string {
	if s.Resources.Bucket == "" {
		return nil
	}
	return []string{s.Resources.Bucket}
}

// shown is a setting's value for the banner: in full when it is the local
// default, masked when the developer supplied it.
func (s *Stack) shown(key, value string) string {
	if value == Defaults()[key] {
		return value
	}
	if len(value) <= 10 {
		return "****"
	}
	return value[:6] + "…" + value[len(value)-4:] + " (from " + key + ")"
}

// FunctionNames lists the registered functions, sorted.
func (s *Stack) FunctionNames() []string {
	s.namesMu.Lock()
	defer s.namesMu.Unlock()
	return slices.Sorted(slices.Values(s.names))
}
