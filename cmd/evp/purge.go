package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/spf13/cobra"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/devapi"
)

func init() { commands = append(commands, newPurgeCmd) }

// paramPurgeFunction is the SSM parameter naming a stage's purge-api.
const paramPurgeFunction = "/evp/%s/purge-function"

func newPurgeCmd() *cobra.Command {
	t := &target{}
	cmd := &cobra.Command{
		Use:   "purge",
		Short: "Cache purges: request one, follow a job, list dead letters",
		Long: "Talks to the purge-api function of the local `make dev` stack, or of a deployed stage with --stage.\n" +
			"Locally, without a Cloudflare token, purges are recorded instead of sent: GET <stack>/__purges lists them.",
	}
	t.flags(cmd)
	// --function names purge-api here, not the replay function.
	cmd.PersistentFlags().Lookup("function").Usage = `the purge-api function's name or ARN (default: local "purge-api", or the stage's SSM parameter ` +
		fmt.Sprintf(paramPurgeFunction, "<stage>") + ")"
	cmd.AddCommand(newPurgeTagsCmd(t), newPurgeStatusCmd(t), newPurgeDLQCmd(t))
	return cmd
}

func newPurgeTagsCmd(t *target) *cobra.Command {
	var (
		tenant string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:     "tags --tenant <tenant> <tag>...",
		Short:   "Queue a purge of cache tags (at most 500, all of the tenant)",
		Example: "  evp purge tags --tenant acme tenant:acme:page:/pricing tenant:acme:posts:launch",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tenant == "" {
				return errors.New("--tenant is required")
			}
			var res cachepurge.Result
			if err := t.purgeCall(cmd.Context(), cachepurge.PurgeTagsIn{TenantID: tenant, Tags: args}, cachepurge.OpPurgeTags, &res); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			note := ""
			if res.Coalesced {
				note = " (joined the job already queued for these tags)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s%s\n", res.JobID, res.Status, note)
			return nil
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant whose cache tags to purge")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newPurgeStatusCmd(t *target) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status <job-id>",
		Short: "Show a purge job (jobs are kept 24 hours)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var job *cachepurge.Job
			if err := t.purgeCall(cmd.Context(), cachepurge.StatusIn{JobID: args[0]}, cachepurge.OpGetPurgeStatus, &job); err != nil {
				return err
			}
			if job == nil {
				return fmt.Errorf("no purge job %s (unknown, or older than 24 hours)", args[0])
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), job)
			}
			renderJob(cmd.OutOrStdout(), *job)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newPurgeDLQCmd(t *target) *cobra.Command {
	var (
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "List purge jobs that failed for good (kept 7 days), newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out cachepurge.DeadLetters
			if err := t.purgeCall(cmd.Context(), cachepurge.DeadLettersIn{Limit: limit}, cachepurge.OpDeadLetters, &out); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), out.DeadLetters)
			}
			if len(out.DeadLetters) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no dead letters in the last 7 days")
				return nil
			}
			tw := table(cmd.OutOrStdout())
			fmt.Fprintln(tw, "FAILED\tJOB\tTENANT\tTAGS\tATTEMPTS\tERROR")
			for _, d := range out.DeadLetters {
				code := ""
				if d.Error != nil {
					code = d.Error.Code
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", ts(d.FailedAt), d.JobID, d.TenantID, len(d.Tags), d.Attempts, code)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "how many (1..200)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func renderJob(w io.Writer, j cachepurge.Job) {
	tw := table(w)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("Job", j.JobID)
	row("Tenant", j.TenantID)
	row("Status", string(j.Status))
	row("Enqueued", ts(j.EnqueuedAt))
	if j.StartedAt != nil {
		row("Started", ts(*j.StartedAt))
	}
	if j.CompletedAt != nil {
		row("Completed", ts(*j.CompletedAt))
	}
	if j.FailedAt != nil {
		row("Failed", ts(*j.FailedAt))
	}
	if j.Purged != nil {
		row("Purged", fmt.Sprint(*j.Purged))
	}
	if j.RetryCount != nil && *j.RetryCount > 0 {
		row("Retries", fmt.Sprint(*j.RetryCount))
	}
	if j.Error != nil {
		row("Error", j.Error.Code+": "+j.Error.Message)
	}
	row("Tags", strings.Join(j.Tags, " "))
	_ = tw.Flush()
}

// purgeCall invokes one purge-api op; a refusal ({ok:false,error}) is an
// error with its code.
func (t *target) purgeCall(ctx context.Context, in any, op string, out any) error {
	client, fn, where, err := t.purgeFunction(ctx)
	if err != nil {
		return err
	}
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	// The inputs embed their op; set it on the JSON object.
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	m["op"] = op
	payload, err := json.Marshal(m)
	if err != nil {
		return err
	}
	res, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: payload, InvocationType: lambdatypes.InvocationTypeRequestResponse})
	if err != nil {
		return fmt.Errorf("invoke %s at %s: %w (is `make dev` running, or is --stage right?)", fn, where, err)
	}
	if res.FunctionError != nil {
		return fmt.Errorf("%s failed: %s", fn, res.Payload)
	}
	if e := cachepurge.FailureOf(res.Payload); e != nil {
		return fmt.Errorf("%s: %s", e.Code, e.Message)
	}
	return json.Unmarshal(res.Payload, out)
}

// purgeFunction resolves the purge-api function: --function, else the
// local stack's, or the stage's from SSM.
func (t *target) purgeFunction(ctx context.Context) (*lambda.Client, string, string, error) {
	if t.stage == "" {
		if t.profile != "" || t.region != "" {
			return nil, "", "", errors.New("--profile and --region need --stage")
		}
		fn := t.function
		if fn == "" {
			fn = "purge-api"
		}
		return devapi.LambdaClient(devapi.Config(), t.url), fn, t.url, nil
	}
	cfg, err := awsConfig(ctx, t.profile, t.region)
	if err != nil {
		return nil, "", "", fmt.Errorf("aws config: %w", err)
	}
	fn := t.function
	if fn == "" {
		if fn, err = parameter(ctx, ssm.NewFromConfig(cfg), fmt.Sprintf(paramPurgeFunction, t.stage)); err != nil {
			return nil, "", "", err
		}
	}
	return lambda.NewFromConfig(cfg), fn, "stage " + t.stage, nil
}
