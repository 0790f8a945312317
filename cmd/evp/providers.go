package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// Every provider but Stripe (whose command builds minimal events and
// tags tenants: stripe.go) gets `evp <provider> send`, from its
// declaration.
func init() {
	for _, d := range providers.All() {
		if d.Name != stripe.Source {
			commands = append(commands, func() *cobra.Command { return newProviderCmd(d) })
		}
	}
}

func newProviderCmd(d webhook.Declaration) *cobra.Command {
	root := &cobra.Command{Use: d.Name, Short: d.Title + " developer helpers for the local stack"}
	root.AddCommand(newProviderSendCmd(d))
	return root
}

func newProviderSendCmd(d webhook.Declaration) *cobra.Command {
	var (
		url, secret, event, account, source string
		newID                               bool
	)
	dir := filepath.Join("events", d.Name)
	vars := webhookfn.VarsOf(d)
	samples := providerSamples(dir)
	long := "Sends a " + d.Title + " delivery to the local stack's POST " + d.Path() + ", signed the way " + d.Title + "\n" +
		"signs its deliveries, and prints the HTTP answer.\n\n" +
		"The argument is a file or a sample's name (" + dir + "/<name>.json: " + strings.Join(samples, ", ") + ").\n" +
		"Sending the same body twice sends the same delivery id (the provider's retries do that): the second\n" +
		"answer is a duplicate. --new-id gives it a fresh id.\n\n" +
		"The secret is --secret, else the first of " + vars.Secret + ", else the local default."
	example := "  evp " + d.Name + " send " + firstOr(samples, "event") + "\n  evp " + d.Name + " send " + firstOr(samples, "event") + " --new-id"
	cmd := &cobra.Command{
		Use:     "send <file.json|sample>",
		Short:   "Sign a " + d.Title + " delivery with the local secret and POST it to the webhook",
		Long:    long,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, name, err := providerBody(dir, args[0])
			if err != nil {
				return err
			}
			if event == "" {
				event = name
			}
			if secret == "" {
				secret = firstOf(os.Getenv(vars.Secret), d.Local.Secret)
			}
			id := deliveryID(event, body)
			if newID {
				id = uuid.NewString()
			}
			headers := d.Sign(webhook.Signing{Body: body, Event: event, ID: id, Account: account, Secret: secret, At: time.Now()})
			req, err := http.NewRequestWithContext(cmd.Context(), http.MethodPost, strings.TrimRight(url, "/")+d.URLPath(source), bytes.NewReader(body))
			if err != nil {
				return err
			}
			for k, v := range headers {
				req.Header.Set(k, v)
			}
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
	f := cmd.Flags()
	f.StringVar(&url, "url", localStackURL(), "the local stack's URL ($EVP_URL)")
	f.StringVar(&secret, "secret", "", "signing secret (default: first of $"+vars.Secret+", else "+d.Local.Secret+")")
	f.BoolVar(&newID, "new-id", false, "give the delivery a fresh id (a new event rather than a redelivery)")
	f.StringVar(&event, "event", "", "the event, for a provider that names it in a header (default: the sample's or file's name)")
	f.StringVar(&account, "account", d.Local.Account, "the account the delivery comes from, for a provider that names it in a header")
	if d.Sources {
		f.StringVar(&source, "source", d.LocalSource, "the source (sender) the delivery is posted as")
	}
	return cmd
}

// providerSamples are the samples' names under dir (found from the working
// directory up).
func providerSamples(dir string) []string {
	found, ok := findUp(dir)
	if !ok {
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(found, "*.json"))
	var out []string
	for _, f := range files {
		out = append(out, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	slices.Sort(out)
	return out
}

// providerBody reads a file, or the sample of that name; name is the
// event the file's name says ("issues.opened").
func providerBody(dir, arg string) (body []byte, name string, err error) {
	name = strings.TrimSuffix(filepath.Base(arg), ".json")
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		body, err := os.ReadFile(arg)
		return body, name, err
	}
	if strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".json") {
		return nil, "", fmt.Errorf("%s: no such file", arg)
	}
	found, ok := findUp(dir)
	if !ok {
		return nil, "", fmt.Errorf("%s: no %s directory here or above", arg, dir)
	}
	body, err = os.ReadFile(filepath.Join(found, arg+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", fmt.Errorf("%s: no such sample (%s)", arg, strings.Join(providerSamples(dir), ", "))
	}
	return body, name, err
}

// deliveryID is a stable id for an event's body: the same sample sent
// twice is one delivery sent twice.
func deliveryID(event string, body []byte) string {
	sum := sha256.Sum256(append([]byte(event+"\n"), body...))
	id, _ := uuid.FromBytes(sum[:16])
	return id.String()
}

func firstOf(list, fallback string) string {
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return fallback
}

func firstOr(list []string, fallback string) string {
	if len(list) == 0 {
		return fallback
	}
	return list[0]
}
