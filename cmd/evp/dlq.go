package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/replay"
)

func init() { commands = append(commands, newDLQCmd) }

func newDLQCmd() *cobra.Command {
	t := &target{}
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Triage and replay dead-letter incidents",
		Long: "Incidents are the dead letters the DLQ archiver drained (one per event and topic) and the dispatches\n" +
			"the outbox sweeper abandoned. List and inspect them, mark them triaged or ignored, and replay them once\n" +
			"the cause is fixed. Acts on the local `make dev` stack unless --stage names a deployed one.",
	}
	t.flags(cmd)
	cmd.AddCommand(newDLQListCmd(t), newDLQViewCmd(t), newDLQReplayCmd(t),
		newDLQTransitionCmd(t, operator.ActionTriage, "Mark incidents triaged (someone is on it)"),
		newDLQTransitionCmd(t, operator.ActionIgnore, "Mark incidents ignored (they will not be replayed)"))
	return cmd
}

func newDLQListCmd(t *target) *cobra.Command {
	var (
		q      operator.Query
		status string
		pg     paging
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List incidents, newest failure first",
		Long: "Lists incidents newest failure first, by status (open by default), tenant, topic, event, error code,\n" +
			"event type and time. One page at a time: --limit sets its size, --cursor continues, --all fetches every page.",
		Example: "  evp dlq list\n" +
			"  evp dlq list --status any --tenant acme --since 24h\n" +
			"  evp dlq list --event evt_1PzB7sLkdIwHu7ixQm3nT0aX --status any\n" +
			"  evp dlq list --error-code subscriber_rejected --type stripe.invoice.paid --all\n" +
			"  evp dlq list --topic billing.events --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status != "any" {
				q.Status = incident.Status(status)
			}
			op, err := t.actions(cmd.Context())
			if err != nil {
				return err
			}
			q.Limit = pg.limit
			incs := []incident.Incident{}
			next, err := pg.fetch(cmd.Context(), func(cursor string) (string, error) {
				q.Cursor = cursor
				var page incident.Page
				if err := op.call(cmd.Context(), operator.Call{Action: operator.ActionList, Query: &q}, &page); err != nil {
					return "", err
				}
				incs = append(incs, page.Incidents...)
				return page.Cursor, nil
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, incident.Page{Incidents: incs, Cursor: next})
			}
			renderIncidentList(out, incs)
			what := "incidents"
			if len(incs) == 1 {
				what = "incident"
			}
			fmt.Fprintf(out, "\n%d %s (status %s)\n", len(incs), what, status)
			more(out, next)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&status, "status", string(incident.StatusOpen), "open, triaged, retrying, resolved, ignored, or any")
	f.StringVar(&q.TenantID, "tenant", "", "only this tenant's incidents")
	f.StringVar(&q.Topic, "topic", "", "only this topic's incidents")
	f.StringVar(&q.EventID, "event", "", "only this event's incidents (with --tenant for an internal producer's event)")
	f.StringVar(&q.ErrorCode, "error-code", "", "only incidents with this error code (e.g. subscriber_rejected)")
	f.StringVar(&q.Type, "type", "", "only incidents of events of this type")
	f.StringVar(&q.Since, "since", "", "last failed since: an age (24h, 7d) or RFC 3339")
	f.StringVar(&q.Until, "until", "", "last failed before: an age or RFC 3339")
	pg.flags(cmd, incident.DefaultPageSize, incident.MaxPageSize)
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func renderIncidentList(w io.Writer, incs []incident.Incident) {
	tw := table(w)
	fmt.Fprintln(tw, "INCIDENT\tSTATUS\tTENANT\tTOPIC\tRETRIES\tCREATED\tEVENT\tERROR")
	for _, inc := range incs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", inc.ID, inc.Status, inc.TenantID, inc.Topic, inc.RetryCount,
			ts(inc.CreatedAt), clip(inc.EventID, 32), clip(inc.ErrorCode+": "+inc.ErrorMessage, 60))
	}
	_ = tw.Flush()
}

func newDLQViewCmd(t *target) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "view <incident-id>",
		Short: "Show an incident: error, history and payload",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			op, err := t.actions(cmd.Context())
			if err != nil {
				return err
			}
			var v operator.IncidentView
			if err := op.call(cmd.Context(), operator.Call{Action: operator.ActionGet, IncidentID: args[0]}, &v); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			renderIncident(cmd.OutOrStdout(), v)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func renderIncident(w io.Writer, v operator.IncidentView) {
	tw := table(w)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("Incident", v.ID)
	row("Status", string(v.Status))
	ev := v.EventID
	if v.Type != "" {
		ev += fmt.Sprintf(" (%s from %s)", v.Type, orDash(v.Source))
	}
	row("Event", ev)
	row("Tenant", v.TenantID)
	row("Topic", v.Topic)
	row("Dead letter", v.SourceQueue)
	row("Retries", fmt.Sprintf("%d (replayed %d times)", v.RetryCount, v.ReplayCount))
	row("Created", ts(v.CreatedAt))
	row("Last failed", ts(v.LastFailedAt))
	if !v.ReplayedAt.IsZero() {
		row("Replayed", ts(v.ReplayedAt))
	}
	if !v.ResolvedAt.IsZero() {
		row("Resolved", ts(v.ResolvedAt)+" by "+v.ResolvedBy)
	}
	row("Error", v.ErrorCode)
	row("", v.ErrorMessage)
	if v.ErrorDetail != "" {
		row("Detail", clip(v.ErrorDetail, 200))
	}
	body := fmt.Sprintf("%s inline (sha256 %s)", size(v.Body.Size), short(v.Body.SHA256))
	if v.Body.External() {
		body = fmt.Sprintf("%s in s3://%s/%s", size(v.Body.Size), v.Body.Bucket, v.Body.Key)
	}
	if v.Body.PayloadKey != "" {
		body += fmt.Sprintf("; payload copy s3://%s/%s", v.Body.Bucket, v.Body.PayloadKey)
	}
	if v.Raw {
		body += " — unparseable, kept verbatim"
	}
	row("Body", body)
	_ = tw.Flush()

	fmt.Fprintln(w, "\nHistory")
	tw = table(w)
	for _, c := range v.History {
		from := string(c.From)
		if from == "" {
			from = "new"
		}
		fmt.Fprintf(tw, "  %s\t%s → %s\t%s\t%s\n", ts(c.At), from, c.To, c.By, clip(c.Note, 80))
	}
	_ = tw.Flush()

	if len(v.Attempts) > 0 {
		fmt.Fprintln(w, "\nDelivery attempts")
		tw = table(w)
		for _, a := range v.Attempts {
			fmt.Fprintf(tw, "  %s\t#%d %s\t%s\n", ts(a.At), a.N, orDash(string(a.Delivery)), clip(attemptDetail(a), 100))
		}
		_ = tw.Flush()
	}

	switch {
	case v.BodyError != "":
		fmt.Fprintf(w, "\nPayload unavailable: %s\n", v.BodyError)
	case len(v.Payload) > 0:
		fmt.Fprintf(w, "\nPayload\n%s\n", pretty(v.Payload, "  "))
	case v.RawBody != "":
		fmt.Fprintf(w, "\nRaw body\n  %s\n", clip(v.RawBody, 2000))
	}
}

// short is the first 12 hex digits of a hash (after its scheme, if any:
// "c2:…", "stripe1:…").
func short(sha string) string {
	if _, hex, ok := strings.Cut(sha, ":"); ok {
		sha = hex
	}
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func newDLQReplayCmd(t *target) *cobra.Command {
	var (
		r      replay.Request
		status string
		yes    bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "replay [<incident-id>…]",
		Short: "Replay incidents to their topic queue once the cause is fixed",
		Long: "Replays the named incidents, or every incident a filter selects (status open by default). A filter\n" +
			"replay first shows what it selected (a dry run) and asks before replaying, unless --yes. On a deployed\n" +
			"stage a filter replay runs the replay state machine and waits for it.\n\n" +
			"Each replay moves the incident to retrying, resets the dispatch so the consumer takes it again, and\n" +
			"re-sends the stored event with replayOf = the incident id; the consumer's success resolves it.",
		Example: "  evp dlq replay inc_0123456789abcdef0123456789abcdef\n" +
			"  evp dlq replay --tenant acme --topic billing.events --dry-run\n" +
			"  evp dlq replay --tenant acme --topic billing.events --yes --note \"subscriber fixed\"",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			r.IncidentIDs = args
			if status != "" {
				r.Status = incident.Status(status)
			}
			if r.Actor == "" {
				r.Actor = defaultActor()
			}
			filter := len(args) == 0
			if filter && r.TenantID == "" && r.Topic == "" && r.ErrorCode == "" && r.Type == "" && status == "" && r.Since == "" && r.Until == "" {
				return errors.New("name incident ids, or select with --tenant, --topic, --error-code, --type, --status, --since or --until")
			}
			op, err := t.actions(ctx)
			if err != nil {
				return err
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if !filter {
				var sum replay.Summary
				if err := op.call(ctx, operator.Call{Action: operator.ActionReplay, Request: &r}, &sum); err != nil {
					return err
				}
				return finishSummary(out, sum, asJSON)
			}

			// A filter: show the selection first.
			preview := r
			preview.DryRun = true
			var dry replay.Summary
			if err := op.call(ctx, operator.Call{Action: operator.ActionReplay, Request: &preview}, &dry); err != nil {
				return err
			}
			if r.DryRun || dry.Selected == 0 {
				return finishSummary(out, dry, asJSON)
			}
			renderSummary(errOut, dry)
			if !yes {
				ok, err := confirm(cmd.InOrStdin(), errOut, fmt.Sprintf("Replay %d incidents on %s?", dry.ReplayedCount, op.describe()))
				if err != nil {
					return err
				}
				if !ok {
					return errDeclined
				}
			}
			bar := &progressBar{w: errOut, total: dry.Selected, label: "replaying"}
			sum, err := op.bulk(ctx, r, bar.draw)
			bar.finish()
			if err != nil {
				return err
			}
			return finishSummary(out, sum, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.TenantID, "tenant", "", "select this tenant's incidents (with ids: refuse other tenants')")
	f.StringVar(&r.Topic, "topic", "", "select this topic's incidents")
	f.StringVar(&r.ErrorCode, "error-code", "", "select incidents with this error code")
	f.StringVar(&r.Type, "type", "", "select incidents of events of this type")
	f.StringVar(&status, "status", "", "select incidents in this status (default open)")
	f.StringVar(&r.Since, "since", "", "created since: an age (24h, 7d) or RFC 3339")
	f.StringVar(&r.Until, "until", "", "created before: an age or RFC 3339")
	f.IntVar(&r.Limit, "limit", 0, fmt.Sprintf("at most this many incidents (default %d, max %d)", replay.DefaultLimit, replay.MaxBulkLimit))
	f.BoolVar(&r.DryRun, "dry-run", false, "show what would be replayed; change nothing")
	f.BoolVar(&r.Force, "force", false, "also replay resolved, ignored or stuck retrying incidents, and completed dispatches")
	f.StringVar(&r.Actor, "actor", "", "who is replaying (default $EVP_ACTOR or your user name)")
	f.StringVar(&r.Note, "note", "", "why, recorded in each incident's history")
	f.BoolVar(&yes, "yes", false, "do not ask for confirmation")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return cmd
}

// finishSummary prints a summary and fails the command when some replays
// failed.
func finishSummary(w io.Writer, sum replay.Summary, asJSON bool) error {
	if asJSON {
		if err := writeJSON(w, sum); err != nil {
			return err
		}
	} else {
		renderSummary(w, sum)
	}
	if sum.ErrorCount > 0 {
		return errSilent
	}
	return nil
}

func renderSummary(w io.Writer, sum replay.Summary) {
	verb := "replayed"
	if sum.DryRun {
		verb = "would replay"
	}
	fmt.Fprintf(w, "selected %d, %s %d, skipped %d, errors %d", sum.Selected, verb, sum.ReplayedCount, sum.SkippedCount, sum.ErrorCount)
	if sum.Truncated {
		fmt.Fprint(w, " (limit reached: more incidents match)")
	}
	fmt.Fprintln(w)
	if len(sum.Sample) > 0 {
		fmt.Fprintln(w, "sample:")
		tw := table(w)
		for _, b := range sum.Sample {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", b.IncidentID, b.Status, b.TenantID, b.Topic, clip(b.ErrorCode+": "+b.ErrorMessage, 60))
		}
		_ = tw.Flush()
	}
	for _, s := range sum.Skipped {
		fmt.Fprintf(w, "skipped %s: %s (%s)\n", s.IncidentID, s.Reason, s.Detail)
	}
	for _, e := range sum.Errors {
		fmt.Fprintf(w, "error   %s: %s\n", e.IncidentID, e.Error)
	}
	if sum.SkippedCount > len(sum.Skipped) || sum.ErrorCount > len(sum.Errors) {
		fmt.Fprintf(w, "(the first %d skips and errors are listed; skipped by reason: %v)\n", replay.MaxListed, sum.SkippedByReason)
	}
}

// errDeclined is a confirmation answered no: nothing was done, which is
// not what the command was asked to do, so it exits 1 (a script that
// pipes an answer in must not read a decline as a replay).
var errDeclined = errors.New("not confirmed: nothing replayed")

// confirm asks a yes/no question on a terminal; without one it refuses
// (scripts pass --yes).
func confirm(in io.Reader, w io.Writer, question string) (bool, error) {
	if f, ok := in.(*os.File); ok {
		if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
			return false, errors.New("not asking without a terminal: pass --yes")
		}
	}
	fmt.Fprintf(w, "%s [y/N] ", question)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

func newDLQTransitionCmd(t *target, action, short string) *cobra.Command {
	var note, actor string
	cmd := &cobra.Command{
		Use:     action + " <incident-id>… --note \"…\"",
		Short:   short,
		Example: fmt.Sprintf("  evp dlq %s inc_0123456789abcdef0123456789abcdef --note \"subscriber down, vendor ticket 123\"", action),
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(note) == "" {
				return fmt.Errorf("--note is required: say why")
			}
			if actor == "" {
				actor = defaultActor()
			}
			op, err := t.actions(cmd.Context())
			if err != nil {
				return err
			}
			failed := false
			for _, id := range args {
				var inc incident.Incident
				err := op.call(cmd.Context(), operator.Call{Action: action, IncidentID: id, Actor: actor, Note: note}, &inc)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", id, err)
					failed = true
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", inc.ID, inc.Status)
			}
			if failed {
				return errSilent
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "why (required; recorded in the history)")
	cmd.Flags().StringVar(&actor, "actor", "", "who (default $EVP_ACTOR or your user name)")
	return cmd
}
