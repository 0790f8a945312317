package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/spf13/cobra"
	stripewebhook "github.com/stripe/stripe-go/v76/webhook"

	"github.com/siteswarm/eventplatform/internal/devapi"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

func init() { commands = append(commands, newSmokeCmd) }

// The SSM parameters `evp smoke --stage` reads (docs/deploy.md, "Outputs
// and stage discovery").
const (
	paramWebhookStripeURL = "/evp/%s/webhook-stripe-url"
	paramAdminURL         = "/evp/%s/admin-url"
	paramStripeSecret     = "/evp/%s/stripe-webhook-secret"
	paramAdminKeySecret   = "/evp/%s/admin-api-key-secret"
)

// smokeTarget is where a smoke test sends its event and how it follows it.
type smokeTarget struct {
	// where names the target in messages.
	where      string
	webhookURL string
	// adminURL is the admin API's base (…/admin).
	adminURL string
	secret   string
	adminKey string
	// viewHint is what to add to `evp dlq view` for this target.
	viewHint string
}

// smokeOptions are the command's flags.
type smokeOptions struct {
	url, stage, profile, region string
	tenant, typ                 string
	secret, adminKey            string
	timeout, every              time.Duration
	yes                         bool
}

func newSmokeCmd() *cobra.Command {
	o := smokeOptions{every: time.Second}
	cmd := &cobra.Command{
		Use:   "smoke [--stage <stage>]",
		Short: "Send a signed Stripe test event through the webhook and follow it to every subscriber (or to its incident)",
		Long: "After a deploy (or against the local stack): signs a Stripe test event (livemode false, id evt_smoke_…,\n" +
			"metadata.tenant_id --tenant, metadata.evp_smoke \"true\") with the stage's webhook signing secret, POSTs it to\n" +
			"the stage's real webhook URL, then follows it through the admin API — the ledger, each routed topic's\n" +
			"dispatch, delivery, or the incident when the subscriber refuses it — printing each hop. Exit 0 when every\n" +
			"topic delivered, 1 otherwise.\n\n" +
			"With --stage it reads the stage's URLs from SSM (/evp/<stage>/webhook-stripe-url, admin-url) and the\n" +
			"signing secret and admin key from Secrets Manager (the secrets those parameters name; or --secret and\n" +
			"--admin-key / $EVP_ADMIN_KEY). The stage's subscribers receive the test event: it asks first (--yes does\n" +
			"not), and --type chooses an event your subscribers tolerate. See docs/deploy.md, \"Smoke test\".",
		Example: "  evp smoke                                  # the local stack\n" +
			"  evp smoke --stage prod --profile prod-admin --yes\n" +
			"  evp smoke --stage prod --type customer.subscription.updated --tenant smoke-test",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			tg, err := o.resolve(ctx)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if o.stage != "" && !o.yes {
				ok, err := confirm(cmd.InOrStdin(), cmd.ErrOrStderr(), fmt.Sprintf("Send a test %s event to %s? Its subscribers receive it", o.typ, tg.where))
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("not confirmed: nothing sent")
				}
			}
			return smoke(ctx, out, tg, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.url, "url", localStackURL(), "the local stack's URL ($EVP_URL), without --stage")
	f.StringVar(&o.stage, "stage", "", "a deployed stage (reads /evp/<stage>/… SSM parameters and the stage's secrets)")
	f.StringVar(&o.profile, "profile", "", "AWS shared-config profile for --stage")
	f.StringVar(&o.region, "region", "", "AWS region for --stage")
	f.StringVar(&o.tenant, "tenant", "smoke", "the tenant the test event names (metadata.tenant_id)")
	f.StringVar(&o.typ, "type", "invoice.paid", "the Stripe event type (a type the topology routes)")
	f.StringVar(&o.secret, "secret", "", "the webhook signing secret (default: the stage's secret, or locally $STRIPE_WEBHOOK_SECRET's first, else the local default)")
	f.StringVar(&o.adminKey, "admin-key", "", "the admin API key (default: $EVP_ADMIN_KEY, else the stage's secret, or locally the local default)")
	f.DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long to follow the event")
	f.BoolVar(&o.yes, "yes", false, "do not ask before sending to a stage")
	return cmd
}

// resolve finds the webhook, the admin API and their credentials: the
// local stack's, or the stage's.
func (o smokeOptions) resolve(ctx context.Context) (smokeTarget, error) {
	adminKey := o.adminKey
	if adminKey == "" {
		adminKey = strings.TrimSpace(os.Getenv("EVP_ADMIN_KEY"))
	}
	if o.stage == "" {
		if o.profile != "" || o.region != "" {
			return smokeTarget{}, errors.New("--profile and --region need --stage")
		}
		base := strings.TrimRight(o.url, "/")
		secret := o.secret
		if secret == "" {
			secret = firstSecret(os.Getenv(webhookfn.EnvSecret))
		}
		if adminKey == "" {
			adminKey = devapi.DefaultAdminKey
		}
		return smokeTarget{where: "the local stack at " + base, webhookURL: base + webhookfn.Path, adminURL: base + "/admin",
			secret: secret, adminKey: adminKey}, nil
	}
	cfg, err := awsConfig(ctx, o.profile, o.region)
	if err != nil {
		return smokeTarget{}, fmt.Errorf("aws config: %w", err)
	}
	params := ssm.NewFromConfig(cfg)
	tg := smokeTarget{where: "stage " + o.stage, secret: o.secret, adminKey: adminKey, viewHint: " --stage " + o.stage}
	if o.profile != "" {
		tg.viewHint += " --profile " + o.profile
	}
	if tg.webhookURL, err = parameter(ctx, params, fmt.Sprintf(paramWebhookStripeURL, o.stage)); err != nil {
		return tg, err
	}
	if tg.adminURL, err = parameter(ctx, params, fmt.Sprintf(paramAdminURL, o.stage)); err != nil {
		return tg, err
	}
	secrets := secretsmanager.NewFromConfig(cfg)
	for _, s := range []struct {
		dst   *string
		param string
		what  string
	}{{&tg.secret, paramStripeSecret, "the Stripe webhook signing secret (or pass --secret)"}, {&tg.adminKey, paramAdminKeySecret, "the admin API key (or pass --admin-key)"}} {
		if *s.dst != "" {
			continue
		}
		arn, err := parameter(ctx, params, fmt.Sprintf(s.param, o.stage))
		if err != nil {
			return tg, err
		}
		if *s.dst, err = firstOfSecret(ctx, secrets, arn); err != nil {
			return tg, fmt.Errorf("read %s: %w", s.what, err)
		}
	}
	return tg, nil
}

// firstOfSecret reads a secret holding a JSON list (the platform's
// rotation format) and returns its first, current value.
func firstOfSecret(ctx context.Context, c *secretsmanager.Client, arn string) (string, error) {
	out, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		return "", err
	}
	var list []string
	if err := json.Unmarshal([]byte(aws.ToString(out.SecretString)), &list); err != nil || len(list) == 0 || list[0] == "" {
		return "", fmt.Errorf("secret %s is not a JSON list of values: set it first (docs/deploy.md, \"After the first deploy: set the secrets\")", arn)
	}
	return list[0], nil
}

// smokeEvent is a Stripe test event of typ for tenant: livemode false, an
// id of its own, and marked as a smoke test in its metadata.
func smokeEvent(typ, tenant string, at time.Time) (id string, body []byte) {
	id = "evt_smoke_" + randomHex(24)
	kind := typ
	if i := strings.LastIndexByte(typ, '.'); i > 0 {
		kind = typ[:i]
	}
	ev := map[string]any{
		"id": id, "object": "event", "api_version": stripeAPIVersion, "created": at.Unix(), "type": typ,
		"livemode": false, "pending_webhooks": 1, "request": map[string]any{"id": nil, "idempotency_key": nil},
		"data": map[string]any{"object": map[string]any{
			"id": "smoke_" + randomHex(16), "object": strings.ReplaceAll(kind, "customer.", ""), "customer": "cus_evp_smoke", "livemode": false,
			"metadata": map[string]any{"tenant_id": tenant, "evp_smoke": "true"},
		}},
	}
	body, _ = json.Marshal(ev)
	return id, body
}

// errSmokeFailed is a smoke test whose event did not reach every
// subscriber: the hops say where it stopped.
var errSmokeFailed = errors.New("smoke test failed")

// smoke sends the event and follows it, printing each hop.
func smoke(ctx context.Context, w io.Writer, tg smokeTarget, o smokeOptions) error {
	start := time.Now()
	id, body := smokeEvent(o.typ, o.tenant, start)
	fmt.Fprintf(w, "smoke test of %s: a signed Stripe test event (%s, livemode false, tenant %s)\n", tg.where, o.typ, o.tenant)

	// 1. The webhook, as Stripe calls it.
	signed := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: tg.secret, Timestamp: start})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tg.webhookURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks) evp-smoke")
	req.Header.Set("Stripe-Signature", signed.Header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", tg.webhookURL, err)
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	var res struct {
		Status        string   `json:"status"`
		EventID       string   `json:"eventId"`
		Topics        []string `json:"topics"`
		PendingTopics []string `json:"pendingTopics"`
		Error         *struct {
			Code, Message string
		} `json:"error"`
	}
	_ = json.Unmarshal(answer, &res)
	took := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(w, "  webhook   POST %s → HTTP %d in %s: %s\n", tg.webhookURL, resp.StatusCode, ms(took), clip(string(answer), 300))
		hint := ""
		switch {
		case resp.StatusCode == http.StatusUnauthorized:
			hint = " (the signature: is the signing secret the stage's? docs/deploy.md, \"After the first deploy\")"
		case res.Error != nil && res.Error.Code == "tenant_unresolved":
			hint = " (the tenant: --tenant names one)"
		}
		return fmt.Errorf("%w: the webhook answered %d%s", errSmokeFailed, resp.StatusCode, hint)
	}
	fmt.Fprintf(w, "  webhook   POST %s → HTTP 200 %s in %s (%s; topics %s)\n", tg.webhookURL, res.Status, ms(took), id, strings.Join(res.Topics, ", "))
	if len(res.Topics) == 0 {
		return fmt.Errorf("%w: the event was not routed to any topic (%s): choose a --type the topology routes", errSmokeFailed, res.Status)
	}

	// 2. The ledger and each topic's dispatch, through the admin API.
	f := follower{w: w, tg: tg, id: id, tenant: o.tenant, start: start, seen: map[string]string{}}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	every := o.every
	if every <= 0 {
		every = time.Second
	}
	var lastErr error
	for {
		done, err := f.poll(ctx)
		switch {
		case errors.Is(err, errSmokeFailed):
			return err
		case err != nil:
			lastErr = err // the admin API may blink; retried until the timeout
		case done:
			return f.verdict(w)
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(w, "smoke test failed: not every topic delivered within %s (%s); the event is %s\n", o.timeout, f.pending(), id)
			if lastErr != nil {
				fmt.Fprintf(w, "  last error reading it: %v\n", lastErr)
			}
			return errSilent
		case <-time.After(every):
		}
	}
}

// follower polls an event's view and prints what changed.
type follower struct {
	w      io.Writer
	tg     smokeTarget
	id     string
	tenant string
	start  time.Time
	stored bool
	// seen is each topic's last printed state.
	seen map[string]string
	last operator.EventView
}

// poll reads the event once; done when every topic delivered or ended in
// an incident.
func (f *follower) poll(ctx context.Context) (bool, error) {
	v, found, err := f.view(ctx)
	if err != nil || !found {
		return false, err
	}
	f.last = v
	if !f.stored {
		f.stored = true
		fmt.Fprintf(f.w, "  ledger    stored for tenant %s, %s (%s/events/%s?tenant=%s)\n", v.TenantID, v.Status, f.tg.adminURL, f.id, url.QueryEscape(f.tenant))
	}
	done := true
	for _, d := range v.Dispatches {
		state, final := dispatchState(d)
		if state != f.seen[d.Topic] {
			f.seen[d.Topic] = state
			fmt.Fprintf(f.w, "  %-9s %s (%s after the webhook)\n", d.Topic, state, ms(time.Since(f.start)))
		}
		done = done && final
	}
	return done && len(v.Dispatches) > 0, nil
}

// dispatchState says where a topic's dispatch is, and whether that is the
// end of the test for it (delivered, or an incident opened).
func dispatchState(d operator.DispatchView) (string, bool) {
	switch {
	case d.Status == outbox.StatusCompleted:
		if d.Attempts == 0 {
			return "delivered (completed)", true
		}
		return fmt.Sprintf("delivered (completed; attempts %d)", d.Attempts), true
	case d.Incident != nil:
		return fmt.Sprintf("incident %s %s: %s: %s", d.Incident.IncidentID, d.Incident.Status, d.Incident.ErrorCode, clip(d.Incident.ErrorMessage, 200)), true
	case slices.Contains([]outbox.Status{outbox.StatusDLQ, outbox.StatusDLQAbandoned, outbox.StatusFailed}, d.Status):
		return fmt.Sprintf("%s after %d attempt%s%s; waiting for its incident", d.Status, d.Attempts, plural(d.Attempts), smokeError(d)), false
	case d.Attempts > 0:
		return fmt.Sprintf("%s, attempt %d%s", d.Status, d.Attempts, smokeError(d)), false
	}
	return string(d.Status), false
}

// smokeError is a dispatch's last error, after a colon.
func smokeError(d operator.DispatchView) string {
	if d.LastError == "" {
		return ""
	}
	return ": " + clip(d.LastError, 200)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// pending names the topics that have not delivered.
func (f *follower) pending() string {
	var out []string
	for _, d := range f.last.Dispatches {
		if d.Status != outbox.StatusCompleted {
			out = append(out, d.Topic+" "+string(d.Status))
		}
	}
	if !f.stored {
		return "the event never showed in the ledger"
	}
	return strings.Join(out, ", ")
}

// verdict prints the outcome: every topic delivered, or which ended in an
// incident.
func (f *follower) verdict(w io.Writer) error {
	var failed []string
	for _, d := range f.last.Dispatches {
		if d.Status != outbox.StatusCompleted {
			failed = append(failed, d.Topic)
			if d.Incident != nil {
				fmt.Fprintf(w, "  see it:   evp dlq view %s%s\n", d.Incident.IncidentID, f.tg.viewHint)
			}
		}
	}
	if len(failed) == 0 {
		fmt.Fprintf(w, "smoke test passed: %s delivered to every topic (%s) in %s\n", f.id, strings.Join(f.last.Topics, ", "), ms(time.Since(f.start)))
		return nil
	}
	fmt.Fprintf(w, "smoke test failed: %d of %d topics did not deliver (%s): the subscriber refused it, an incident each\n", len(failed), len(f.last.Dispatches), strings.Join(failed, ", "))
	return errSilent
}

// view GETs the event's view from the admin API; found is false while it
// is not in the ledger yet.
func (f *follower) view(ctx context.Context) (operator.EventView, bool, error) {
	var v operator.EventView
	u := f.tg.adminURL + "/events/" + url.PathEscape(f.id) + "?payload=false&tenant=" + url.QueryEscape(f.tenant)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return v, false, err
	}
	req.Header.Set("Authorization", "Bearer "+f.tg.adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return v, false, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
		if err := json.Unmarshal(b, &v); err != nil {
			return v, false, fmt.Errorf("GET %s: %w", u, err)
		}
		return v, true, nil
	case http.StatusNotFound:
		return v, false, nil
	case http.StatusUnauthorized, http.StatusForbidden:
		return v, false, fmt.Errorf("%w: the admin API refused the key (HTTP %d): --admin-key or $EVP_ADMIN_KEY", errSmokeFailed, resp.StatusCode)
	}
	return v, false, fmt.Errorf("GET %s: HTTP %d: %s", u, resp.StatusCode, clip(string(b), 200))
}

// ms renders a duration for a hop: 412 ms, 1.8 s.
func ms(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
