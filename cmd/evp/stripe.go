package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/spf13/cobra"
	stripewebhook "github.com/stripe/stripe-go/v76/webhook"

	"github.com/siteswarm/eventplatform/internal/devapi"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

func init() { commands = append(commands, newStripeCmd) }

// stripeSamplesDir holds the sample Stripe events `evp stripe send <type>`
// looks up.
const stripeSamplesDir = "events/stripe"

// stripeAPIVersion is what minimal events claim; the webhook ignores
// API-version mismatches anyway.
const stripeAPIVersion = "2024-06-20"

func newStripeCmd() *cobra.Command {
	root := &cobra.Command{Use: "stripe", Short: "Stripe helpers: send events to the local stack, redrive a stage's EventBridge DLQ"}
	root.AddCommand(newStripeSendCmd(), newStripeRedriveCmd())
	return root
}

func newStripeSendCmd() *cobra.Command {
	var (
		url, secret, tenant, via string
		newID                    bool
	)
	cmd := &cobra.Command{
		Use:   "send <file.json|type>",
		Short: "Sign a Stripe event with the local secret and POST it to the webhook",
		Long: "Sends a Stripe event to the local stack's POST /webhook/stripe, signed like Stripe signs deliveries\n" +
			"(Stripe-Signature, v1 HMAC-SHA256 with the webhook secret), and prints the HTTP answer.\n\n" +
			"The argument is a file, a sample's type (" + stripeSamplesDir + "/<type>.json, e.g. invoice.paid), or any\n" +
			"other event type, for which a minimal event is built. Sending the same file twice sends the same\n" +
			"event id (Stripe's retries do that): the second answer is a duplicate. --new-id gives it a fresh id.\n\n" +
			"The secret is --secret, else the first of STRIPE_WEBHOOK_SECRET, else the local default.\n\n" +
			"--via eventbridge delivers it as Stripe's Amazon EventBridge destination does instead: an EventBridge\n" +
			"event (source " + devapi.StripeEventSource + ", detail the Stripe event, no signature) handed to the\n" +
			"local " + devapi.StripeEventBridgeFunction + " function through the Lambda Invoke API, as a stage's rule on the partner bus\n" +
			"would. The same event by webhook and by EventBridge is one event: the second is a duplicate.",
		Example: "  evp stripe send invoice.paid\n" +
			"  evp stripe send ./my-event.json --new-id\n" +
			"  evp stripe send customer.subscription.deleted --tenant acme\n" +
			"  evp stripe send invoice.paid --via eventbridge",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := stripeEvent(args[0], tenant, newID)
			if err != nil {
				return err
			}
			switch via {
			case "webhook":
			case "eventbridge":
				return sendStripeEventBridge(cmd, url, body)
			default:
				return fmt.Errorf("--via %q: webhook or eventbridge", via)
			}
			if secret == "" {
				secret = firstSecret(os.Getenv(webhookfn.EnvSecret))
			}
			signed := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{
				Payload: body, Secret: secret, Timestamp: time.Now(),
			})
			req, err := http.NewRequestWithContext(cmd.Context(), http.MethodPost, strings.TrimRight(url, "/")+webhookfn.Path, bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json; charset=utf-8")
			req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks) evp")
			req.Header.Set("Stripe-Signature", signed.Header)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("post to %s: %w (is `make dev` running?)", req.URL, err)
			}
			defer resp.Body.Close()
			answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			printHTTPAnswer(cmd.OutOrStdout(), resp, answer)
			if resp.StatusCode >= 400 {
				return errSilent
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", localStackURL(), "the local stack's URL ($EVP_URL)")
	cmd.Flags().StringVar(&secret, "secret", "", "webhook signing secret (default: first of $STRIPE_WEBHOOK_SECRET, else "+devapi.DefaultStripeSecret+")")
	cmd.Flags().BoolVar(&newID, "new-id", false, "give the event a fresh evt_ id (a new event rather than a redelivery)")
	cmd.Flags().StringVar(&via, "via", "webhook", "webhook (signed POST to the route) or eventbridge (Stripe's EventBridge destination)")
	cmd.Flags().StringVar(&tenant, "tenant", "", "set data.object.metadata.tenant_id (how the webhook maps an event to a tenant)")
	return cmd
}

// sendStripeEventBridge hands the event to the local stripe-eventbridge
// function as the rule on a stage's partner bus does, and prints what
// became of it: EventBridge gets no answer but an error to retry on.
func sendStripeEventBridge(cmd *cobra.Command, url string, body []byte) error {
	ev, ok := stripe.PartnerEvent(body, devapi.StripeEventSource, "evp-"+randomHex(16), time.Now())
	if !ok {
		return errors.New("not a Stripe event: it needs an id and a type")
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	out, err := devapi.LambdaClient(devapi.Config(), url).Invoke(cmd.Context(), &lambda.InvokeInput{
		FunctionName: aws.String(devapi.StripeEventBridgeFunction), Payload: payload,
	})
	if err != nil {
		return fmt.Errorf("invoke %s: %w (is `make dev` running at %s?)", devapi.StripeEventBridgeFunction, err, url)
	}
	if out.FunctionError != nil {
		fmt.Fprintf(cmd.OutOrStdout(), "not published; EventBridge would retry it: %s\n", out.Payload)
		return errSilent
	}
	fmt.Fprintf(cmd.OutOrStdout(), "delivered through EventBridge (%s) to %s: published, a duplicate, or refused for good (see the stack's log)\n", devapi.StripeEventSource, devapi.StripeEventBridgeFunction)
	return nil
}

func firstSecret(list string) string {
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return devapi.DefaultStripeSecret
}

// stripeEvent loads or builds the event to send.
func stripeEvent(arg, tenant string, newID bool) ([]byte, error) {
	raw, err := readStripeEvent(arg)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		raw = minimalStripeEvent(arg)
		newID = true
	}
	if !newID && tenant == "" {
		return raw, nil // byte for byte, as Stripe would resend it
	}
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object: %w", arg, err)
	}
	if newID {
		ev["id"] = "evt_local_" + randomHex(12)
		ev["created"] = time.Now().Unix()
	}
	if tenant != "" {
		data, _ := ev["data"].(map[string]any)
		obj, _ := data["object"].(map[string]any)
		if obj == nil {
			return nil, fmt.Errorf("%s has no data.object to tag with a tenant", arg)
		}
		meta, _ := obj["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["tenant_id"] = tenant
		obj["metadata"] = meta
	}
	return json.MarshalIndent(ev, "", "  ")
}

// readStripeEvent reads a file, or the sample for a type; nil (and no
// error) when arg is a type without a sample.
func readStripeEvent(arg string) ([]byte, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return os.ReadFile(arg)
	}
	if strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".json") {
		return nil, fmt.Errorf("%s: no such file", arg)
	}
	if dir, ok := findUp(stripeSamplesDir); ok {
		if raw, err := os.ReadFile(filepath.Join(dir, arg+".json")); err == nil {
			return raw, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return nil, nil
}

// minimalStripeEvent is the smallest event the webhook accepts for typ:
// its object kind is the type's first segment (invoice.paid → invoice).
func minimalStripeEvent(typ string) []byte {
	kind := typ
	if i := strings.LastIndexByte(typ, '.'); i > 0 {
		kind = typ[:i]
	}
	prefix := map[string]string{"invoice": "in", "customer": "cus", "customer.subscription": "sub", "checkout.session": "cs", "charge": "ch", "payment_intent": "pi"}[kind]
	if prefix == "" {
		prefix = "obj"
	}
	ev := map[string]any{
		"id": "evt_local_" + randomHex(12), "object": "event", "api_version": stripeAPIVersion,
		"created": time.Now().Unix(), "type": typ, "livemode": false, "pending_webhooks": 1,
		"request": map[string]any{"id": nil, "idempotency_key": nil},
		"data":    map[string]any{"object": map[string]any{"id": prefix + "_local_" + randomHex(8), "object": strings.ReplaceAll(kind, "customer.", ""), "metadata": map[string]any{}}},
	}
	b, _ := json.MarshalIndent(ev, "", "  ")
	return b
}

func randomHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// findUp finds rel in the working directory or the nearest parent that has
// it (evp runs from anywhere inside the repository).
func findUp(rel string) (string, bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if st, err := os.Stat(filepath.Join(dir, rel)); err == nil && st.IsDir() {
			return filepath.Join(dir, rel), true
		}
		if filepath.Dir(dir) == dir {
			return "", false
		}
	}
}

// printHTTPAnswer prints the status line, the headers worth seeing and the
// body (indented when JSON).
func printHTTPAnswer(w io.Writer, resp *http.Response, body []byte) {
	fmt.Fprintf(w, "HTTP %s\n", resp.Status)
	for _, h := range []string{"Content-Type", "X-Request-Id", "X-Event-Id", "Retry-After"} {
		if v := resp.Header.Get(h); v != "" {
			fmt.Fprintf(w, "%s: %s\n", h, v)
		}
	}
	fmt.Fprintln(w)
	var pretty bytes.Buffer
	if json.Indent(&pretty, body, "", "  ") == nil {
		body = pretty.Bytes()
	}
	fmt.Fprintln(w, strings.TrimRight(string(body), "\n"))
}
