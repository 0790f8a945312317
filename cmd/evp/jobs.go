package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/operator"
)

func init() { commands = append(commands, newJobsCmd) }

func newJobsCmd() *cobra.Command {
	t := &target{}
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "Durable jobs: start one (" + jobKindNames() + "), follow, cancel, restart",
		Long: "Talks to the replay function (which serves the job engine's operations) of the local `make dev` stack,\n" +
			"or of a deployed stage with --stage. Steps run in jobs-worker; see docs/jobs.md. The kinds:\n\n" + jobKindsHelp(),
	}
	t.flags(cmd)
	cmd.AddCommand(newJobsStartCmd(t), newJobsViewCmd(t), newJobsListCmd(t), newJobsCancelCmd(t), newJobsRestartCmd(t), newJobsDownloadCmd(t))
	return cmd
}

// jobKinds are the kinds `evp jobs start` offers, with their arguments.
// evp does not link the kinds themselves (their handlers and ports);
// TestJobsStartHelpNamesEveryKind keeps this list equal to the shipped
// kinds (jobkinds.Kinds).
var jobKinds = []struct{ name, args string }{
	{"tenant-export", "[since=<RFC 3339>] [until=<RFC 3339>] [pageSize=N]: the tenant's events and incidents as gzip NDJSON parts and a manifest in S3"},
	{"subject-erasure", "subject=<id>: redact and delete every copy of the subject's events, with evidence"},
	{"stripe-reconcile", "date=<YYYY-MM-DD> [lookbackDays=N]: publish the Stripe events the webhook missed (also daily, by schedule)"},
	{"file-import", "key=imports/<tenant>/<file> [versionId=<id>]: publish a file of envelopes or Stripe events (started by the bucket's notification)"},
	{"retention-expiry", "[date=<YYYY-MM-DD>]: delete what the tenant's retention policy expires (also daily, by schedule)"},
}

func jobKindNames() string {
	names := make([]string, len(jobKinds))
	for i, k := range jobKinds {
		names[i] = k.name
	}
	return strings.Join(names, ", ")
}

func jobKindsHelp() string {
	var b strings.Builder
	for _, k := range jobKinds {
		fmt.Fprintf(&b, "  %-17s %s\n", k.name, k.args)
	}
	return b.String()
}

// parseArgs turns repeated k=v flags into a JSON object: a value that is
// JSON (a number, true, an object, a "quoted string") is kept as such,
// anything else is a string.
func parseArgs(kv []string) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	for _, a := range kv {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--arg %q: want key=value", a)
		}
		if v != "" && json.Valid([]byte(v)) {
			m[k] = json.RawMessage(v)
			continue
		}
		b, _ := json.Marshal(v)
		m[k] = b
	}
	return json.Marshal(m)
}

func newJobsStartCmd(t *target) *cobra.Command {
	var (
		tenant, key string
		argv        []string
		wait        bool
		timeout     time.Duration
		asJSON      bool
	)
	cmd := &cobra.Command{
		Use:   "start <kind> --tenant <tenant> [--arg key=value]...",
		Short: "Start a job (the same --key returns the job it started)",
		Long:  "Starts a durable job of a kind, with its --arg values:\n\n" + jobKindsHelp() + "\nThe same --key returns the job it started (an erasure is keyed by its subject: a new one supersedes the old).",
		Example: "  evp jobs start tenant-export --tenant acme --arg since=2026-11-01T00:00:00Z --wait\n" +
			"  evp jobs start subject-erasure --tenant acme --arg subject=cus_123\n" +
			"  evp jobs start stripe-reconcile --tenant platform --arg date=2026-12-02 --key 2026-12-02",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tenant == "" {
				return errors.New("--tenant is required")
			}
			raw, err := parseArgs(argv)
			if err != nil {
				return err
			}
			op, err := t.actions(cmd.Context())
			if err != nil {
				return err
			}
			var started operator.JobStarted
			if err := op.call(cmd.Context(), operator.Call{Action: operator.ActionJobStart, Kind: args[0], TenantID: tenant, IdempotencyKey: key, Args: raw}, &started); err != nil {
				return err
			}
			j := started.Job
			if !started.Created {
				fmt.Fprintf(cmd.ErrOrStderr(), "the key already started job %s\n", j.ID)
			}
			if wait {
				ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
				defer cancel()
				if j, err = waitJob(ctx, op, j, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), j)
			}
			if !wait {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", j.ID, j.Status)
				return nil
			}
			renderJobView(cmd.OutOrStdout(), j)
			if j.Status != jobs.StatusCompleted {
				return fmt.Errorf("job %s ended %s", j.ID, j.Status)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant the job works for")
	cmd.Flags().StringVar(&key, "key", "", "idempotency key: a retried start with it returns the same job")
	cmd.Flags().StringArrayVar(&argv, "arg", nil, "an argument of the kind, key=value (repeatable; JSON values kept)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the job ends (a progress line on a terminal)")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "how long --wait waits")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// waitJob polls a job until it ends, redrawing a progress line on a
// terminal.
func waitJob(ctx context.Context, op actions, j jobs.Job, progress io.Writer) (jobs.Job, error) {
	tty := logging.IsTerminal(progress)
	defer func() {
		if tty {
			fmt.Fprintln(progress)
		}
	}()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for !j.Status.Terminal() {
		line := fmt.Sprintf("%s %-9s step %d, attempt %d, generation %d", j.ID, j.Status, j.Steps, max(j.Attempts, 1), j.Generation)
		if p := progressLine(j.Progress); p != "" {
			line += "; " + p
		}
		switch {
		case tty:
			fmt.Fprintf(progress, "\r%s   ", line)
		case line != last:
			// Not a terminal (a log, CI): a line each time it moves.
			fmt.Fprintln(progress, line)
		}
		last = line
		select {
		case <-ctx.Done():
			return j, fmt.Errorf("job %s is still %s: %w (it keeps running; `evp jobs view %s`)", j.ID, j.Status, ctx.Err(), j.ID)
		case <-tick.C:
		}
		if err := op.call(ctx, operator.Call{Action: operator.ActionJobGet, JobID: j.ID}, &j); err != nil {
			return j, err
		}
	}
	return j, nil
}

func newJobsViewCmd(t *target) *cobra.Command {
	var (
		asJSON, wait bool
		timeout      time.Duration
	)
	cmd := &cobra.Command{
		Use:     "view <job-id> [--wait]",
		Short:   "Show a job: status, steps, progress, result or error",
		Example: "  evp jobs view job_0123… --wait   # follow its progress until it ends",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			get := operator.Call{Action: operator.ActionJobGet, JobID: args[0]}
			if !wait {
				return jobCall(cmd, t, get, asJSON)
			}
			op, err := t.actions(cmd.Context())
			if err != nil {
				return err
			}
			var j jobs.Job
			if err := op.call(cmd.Context(), get, &j); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if j, err = waitJob(ctx, op, j, cmd.ErrOrStderr()); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), j)
			}
			renderJobView(cmd.OutOrStdout(), j)
			if j.Status != jobs.StatusCompleted {
				return fmt.Errorf("job %s ended %s", j.ID, j.Status)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the job ends, showing its progress (a line redrawn on a terminal, a line per change otherwise)")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "how long --wait waits")
	return cmd
}

// progressLine renders a job's progress: "700 of 1400 bytes (50%); read 3,
// accepted 2, …" (the counts in name order; "" when the job reports none).
func progressLine(p *jobs.Progress) string {
	if p == nil {
		return ""
	}
	unit := p.Unit
	if unit == "" {
		unit = "units"
	}
	s := fmt.Sprintf("%d %s", p.Done, unit)
	if p.Total > 0 {
		s = fmt.Sprintf("%d of %d %s (%d%%)", p.Done, p.Total, unit, p.Done*100/p.Total)
	}
	if len(p.Counts) > 0 {
		names := slices.Sorted(maps.Keys(p.Counts))
		counts := make([]string, len(names))
		for i, n := range names {
			counts[i] = fmt.Sprintf("%s %d", n, p.Counts[n])
		}
		s += "; " + strings.Join(counts, ", ")
	}
	return s
}

func newJobsCancelCmd(t *target) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cancel <job-id>",
		Short: "Cancel a job (its in-flight step's writes are refused)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return jobCall(cmd, t, operator.Call{Action: operator.ActionJobCancel, JobID: args[0]}, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newJobsRestartCmd(t *target) *cobra.Command {
	var (
		asJSON, fromScratch bool
		note                string
	)
	cmd := &cobra.Command{
		Use:   "restart <job-id>",
		Short: "Restart a failed, cancelled or stuck job at its last checkpoint (or --from-scratch)",
		Long: "Runs the job again under a new generation, from its last checkpoint or --from-scratch: a failed or\n" +
			"cancelled job, or one stuck queued, running or waiting. A completed job is refused (transition_not_allowed):\n" +
			"its work is done; `evp jobs start` a new one to do it again.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return jobCall(cmd, t, operator.Call{Action: operator.ActionJobRestart, JobID: args[0], FromScratch: fromScratch, Note: note}, asJSON)
		},
	}
	cmd.Flags().BoolVar(&fromScratch, "from-scratch", false, "drop the checkpoint and start over")
	cmd.Flags().StringVar(&note, "note", "", "why (kept in the log)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func jobCall(cmd *cobra.Command, t *target, c operator.Call, asJSON bool) error {
	op, err := t.actions(cmd.Context())
	if err != nil {
		return err
	}
	var j jobs.Job
	if err := op.call(cmd.Context(), c, &j); err != nil {
		return err
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), j)
	}
	renderJobView(cmd.OutOrStdout(), j)
	return nil
}

func newJobsListCmd(t *target) *cobra.Command {
	var (
		tenant, kind, status string
		pg                   paging
		asJSON               bool
	)
	cmd := &cobra.Command{
		Use:   "list [--tenant <tenant>] [--kind <kind>] [--status <status>]",
		Short: "List jobs, newest first (every tenant's and kind's unless you name one)",
		Long: "Lists jobs newest first: a tenant's, a kind's, or without either every tenant's jobs of every kind, filtered\n" +
			"by status. One page at a time: --limit sets its size, --cursor continues, --all fetches every page.",
		Example: "  evp jobs list --status failed\n  evp jobs list --tenant acme\n  evp jobs list --kind stripe-reconcile --status failed --all",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			op, err := t.actions(cmd.Context())
			if err != nil {
				return err
			}
			if status == "any" {
				status = ""
			}
			list := []jobs.Job{}
			next, err := pg.fetch(cmd.Context(), func(cursor string) (string, error) {
				var page jobs.Page
				c := operator.Call{Action: operator.ActionJobList, TenantID: tenant, Kind: kind, Status: status, Limit: pg.limit, Cursor: cursor}
				if err := op.call(cmd.Context(), c, &page); err != nil {
					return "", err
				}
				list = append(list, page.Jobs...)
				return page.Cursor, nil
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, jobs.Page{Jobs: list, Cursor: next})
			}
			if len(list) == 0 {
				fmt.Fprintln(out, "no jobs")
				more(out, next)
				return nil
			}
			tw := table(out)
			fmt.Fprintln(tw, "CREATED\tJOB\tKIND\tTENANT\tSTATUS\tSTEPS\tERROR")
			for _, j := range list {
				code := ""
				if j.Error != nil {
					code = j.Error.Code
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", ts(j.CreatedAt), j.ID, j.Kind, j.TenantID, j.Status, j.Steps, orDash(code))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(out)
			more(out, next)
			return nil
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the jobs of a tenant")
	cmd.Flags().StringVar(&kind, "kind", "", "the jobs of a kind")
	cmd.Flags().StringVar(&status, "status", "", "queued, running, waiting, completed, failed or cancelled (default: any)")
	pg.flags(cmd, 50, jobs.MaxListLimit)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func renderJobView(w io.Writer, j jobs.Job) {
	tw := table(w)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("Job", j.ID)
	row("Kind", j.Kind)
	row("Tenant", j.TenantID)
	row("Key", j.IdempotencyKey)
	row("Status", string(j.Status))
	row("Generation", fmt.Sprint(j.Generation))
	row("Steps", fmt.Sprint(j.Steps))
	if p := progressLine(j.Progress); p != "" {
		row("Progress", p)
	}
	if j.Attempts > 0 {
		row("Attempts", fmt.Sprint(j.Attempts))
	}
	row("Created", ts(j.CreatedAt))
	row("Updated", ts(j.UpdatedAt))
	if !j.FinishedAt.IsZero() {
		row("Finished", ts(j.FinishedAt))
	}
	if !j.Status.Terminal() && !j.DueAt.IsZero() {
		row("Due", ts(j.DueAt))
	}
	row("Args", string(j.Args))
	if len(j.Result) > 0 {
		row("Result", string(j.Result))
	}
	if j.Error != nil {
		row("Error", j.Error.Code+": "+j.Error.Message)
	}
	if j.IncidentID != "" {
		row("Incident", j.IncidentID+"  (evp dlq view "+j.IncidentID+"; replaying it restarts the job)")
	}
	_ = tw.Flush()
}
