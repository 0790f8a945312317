package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/siteswarm/eventplatform/internal/aws/lambdainvoke"
	"github.com/siteswarm/eventplatform/internal/devapi"
	"github.com/siteswarm/eventplatform/internal/envelope"
)

func init() { commands = append(commands, newPublishCmd) }

// errSilent fails the command after it printed its own answer.
var errSilent = errors.New("")

// localStackURL is the running `make dev` stack: $EVP_URL, else the
// default address.
func localStackURL() string {
	if u := strings.TrimSpace(os.Getenv("EVP_URL")); u != "" {
		return u
	}
	return devapi.DefaultURL
}

func newPublishCmd() *cobra.Command {
	var (
		url, function, profile, region            string
		id, tenant, typ, source, subject, payload string
		envelopeArg                               string
	)
	cmd := &cobra.Command{
		Use:   "publish",
		Short: "Publish an event: invoke ingest with an envelope and print its result",
		Long: "Builds a platform envelope (or takes a whole one with --envelope) and invokes the ingest function\n" +
			"through the Lambda Invoke API, as internal services do: the local stack by default, or a deployed\n" +
			"function with --profile/--region and --function <ARN>. Prints ingest's result; exits 1 when the\n" +
			"event is rejected.\n\n" +
			"--payload and --envelope take @file.json, - for stdin, or inline JSON.",
		Example: "  evp publish --tenant acme --type inquiry.created --source storefront --payload @events/payloads/inquiry.json\n" +
			"  echo '{\"url\":\"/pricing\"}' | evp publish --tenant acme --type content.published --source cms --payload -\n" +
			"  evp publish --envelope @events/ingest/valid/storefront-inquiry-created.json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var raw []byte
			var err error
			if envelopeArg != "" {
				if tenant != "" || typ != "" || source != "" || payload != "" {
					return errors.New("--envelope is a whole envelope: drop --tenant/--type/--source/--payload")
				}
				if raw, err = readJSONArg(cmd.InOrStdin(), envelopeArg); err != nil {
					return fmt.Errorf("--envelope: %w", err)
				}
			} else {
				if tenant == "" || typ == "" || source == "" || payload == "" {
					return errors.New("--tenant, --type, --source and --payload are required (or give --envelope)")
				}
				body, err := readJSONArg(cmd.InOrStdin(), payload)
				if err != nil {
					return fmt.Errorf("--payload: %w", err)
				}
				if id == "" {
					id = "evt_" + uuid.NewString()
				}
				ev := envelope.Event{ID: id, TenantID: tenant, Type: typ, Source: source, Subject: subject, Timestamp: time.Now().UTC().Truncate(time.Millisecond), Payload: body}
				if raw, err = ev.Marshal(); err != nil {
					return err
				}
			}
			client, err := publishClient(cmd.Context(), url, profile, region)
			if err != nil {
				return err
			}
			res, err := (&lambdainvoke.Ingest{Client: client, Function: function}).Publish(cmd.Context(), raw)
			if err != nil {
				return fmt.Errorf("%w (is `make dev` running at %s?)", err, url)
			}
			out, _ := json.MarshalIndent(res, "", "  ")
			fmt.Fprintln(cmd.OutOrStdout(), string(out))
			if res.Status == envelope.StatusRejected {
				return errSilent
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&tenant, "tenant", "", "tenant id")
	f.StringVar(&typ, "type", "", "event type, e.g. inquiry.created")
	f.StringVar(&source, "source", "", "registered producer, e.g. storefront")
	f.StringVar(&payload, "payload", "", "payload JSON object: @file.json, - (stdin) or inline")
	f.StringVar(&id, "id", "", "idempotency key (default: a fresh evt_<uuid>; reuse one to see deduplication)")
	f.StringVar(&subject, "subject", "", "entity the event is about (FIFO ordering group)")
	f.StringVar(&envelopeArg, "envelope", "", "a whole envelope instead: @file.json, - (stdin) or inline")
	f.StringVar(&url, "url", localStackURL(), "the local stack's URL ($EVP_URL)")
	f.StringVar(&function, "function", "ingest", "ingest's name or ARN")
	f.StringVar(&profile, "profile", "", "invoke a deployed function with this AWS profile (with --function <ARN>)")
	f.StringVar(&region, "region", "", "AWS region of a deployed function")
	return cmd
}

// publishClient is a Lambda client for the local stack, or for AWS when a
// profile or region is given.
func publishClient(ctx context.Context, url, profile, region string) (*lambda.Client, error) {
	if profile == "" && region == "" {
		return devapi.LambdaClient(devapi.Config(), url), nil
	}
	cfg, err := awsConfig(ctx, profile, region)
	if err != nil {
		return nil, err
	}
	return lambda.NewFromConfig(cfg), nil
}

// readJSONArg reads @file, - (stdin) or an inline value, which must be JSON.
func readJSONArg(stdin io.Reader, arg string) ([]byte, error) {
	var raw []byte
	var err error
	switch {
	case arg == "-":
		raw, err = io.ReadAll(io.LimitReader(stdin, lambdainvoke.MaxRequestPayload+1))
	case strings.HasPrefix(arg, "@"):
		raw, err = os.ReadFile(arg[1:])
	default:
		raw = []byte(arg)
	}
	if err != nil {
		return nil, err
	}
	if !json.Valid(raw) {
		return nil, errors.New("not valid JSON")
	}
	return raw, nil
}
