package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

func init() { commands = append(commands, newEventsCmd) }

func newEventsCmd() *cobra.Command {
	t := &target{}
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Inspect accepted events: ledger item and per-topic dispatch timeline",
		Long:  "Reads the event ledger on the local `make dev` stack, or on a deployed stage with --stage.",
	}
	t.flags(cmd)
	cmd.AddCommand(newEventsViewCmd(t), newEventsListCmd(t), newEventsAttemptsCmd(t))
	return cmd
}

func newEventsViewCmd(t *target) *cobra.Command {
	var (
		asJSON, payload bool
		tenant          string
	)
	cmd := &cobra.Command{
		Use:   "view <event-id> [--tenant <tenant>]",
		Short: "Show an event, its topics and each dispatch's timeline with every delivery attempt",
		Long: "Shows an event's ledger item and each topic's dispatch timeline: every delivery attempt (when, which\n" +
			"delivery, how it ended, how long it took, what the subscriber answered), the incident's history, the next\n" +
			"retry. An internal producer's event ids are scoped by tenant: name it with --tenant. A provider's events\n" +
			"(Stripe) are found by their id alone.",
		Example: "  evp events view evt_1PzB7sLkdIwHu7ixQm3nT0aX\n  evp events view inq_42 --tenant acme",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			op, err := t.actions(cmd.Context())
			if err != nil {
				return err
			}
			var v operator.EventView
			if err := op.call(cmd.Context(), operator.Call{Action: operator.ActionEvent, EventID: args[0], TenantID: tenant, Payload: payload}, &v); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			renderEvent(cmd.OutOrStdout(), v)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&payload, "payload", false, "include the payload (inline payloads only)")
	cmd.Flags().StringVar(&tenant, "tenant", "", "the event's tenant (required for an internal producer's event)")
	return cmd
}

func renderEvent(w io.Writer, v operator.EventView) {
	tw := table(w)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("Event", v.EventID)
	row("Tenant", v.TenantID)
	row("Type", v.Type)
	row("Source", v.Source)
	if v.Subject != "" {
		row("Subject", v.Subject)
	}
	row("Occurred", ts(v.Timestamp))
	row("Accepted", ts(v.CreatedAt))
	row("Status", v.Status)
	p := fmt.Sprintf("%s inline", size(v.PayloadSize))
	if v.PayloadRef != nil {
		p = fmt.Sprintf("%s claim-checked in s3://%s/%s", size(v.PayloadSize), v.PayloadRef.Bucket, v.PayloadRef.Key)
	}
	row("Payload", p+" (hash "+short(v.PayloadHash)+")")
	row("Topics", strings.Join(v.Topics, ", "))
	row("Expires", ts(v.ExpiresAt))
	_ = tw.Flush()

	for _, d := range v.Dispatches {
		fmt.Fprintf(w, "\n%s: %s, attempts %d/%d", d.Topic, d.Status, d.Attempts, d.MaxAttempts)
		if d.Incident != nil {
			fmt.Fprintf(w, ", incident %s %s", d.Incident.IncidentID, d.Incident.Status)
		}
		fmt.Fprintln(w)
		tw := table(w)
		for _, s := range timeline(d) {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", ts(s.at), s.what, clip(s.detail, 90))
		}
		_ = tw.Flush()
	}
	if len(v.Payload) > 0 {
		fmt.Fprintf(w, "\nPayload\n%s\n", pretty(v.Payload, "  "))
	}
}

type step struct {
	at           time.Time
	what, detail string
	order        int
}

// timeline merges what the row records (created, last change, next retry,
// last error) with the incident's history into one time-ordered list.
func timeline(d operator.DispatchView) []step {
	var steps []step
	if d.Status == "missing" {
		return []step{{what: "no dispatch row (expired?)"}}
	}
	steps = append(steps, step{at: d.CreatedAt, what: "dispatch created", order: 0})
	if d.UpdatedAt.After(d.CreatedAt) || d.Status != outbox.StatusPending {
		steps = append(steps, step{at: d.UpdatedAt, what: "now " + string(d.Status), detail: lastError(d), order: 2})
	}
	for _, a := range d.DeliveryAttempts {
		steps = append(steps, step{at: a.At, what: fmt.Sprintf("attempt %d (%s)", a.N, orDash(string(a.Delivery))), detail: attemptDetail(a), order: 1})
	}
	for _, c := range d.History {
		what := "incident " + string(c.To)
		if c.From == "" {
			what = "incident opened"
		}
		detail := "by " + c.By
		if c.Note != "" {
			detail += ": " + c.Note
		}
		steps = append(steps, step{at: c.At, what: what, detail: detail, order: 1})
	}
	if !d.NextRetryAt.IsZero() {
		steps = append(steps, step{at: d.NextRetryAt, what: "next retry due", order: 3})
	}
	if !d.LeaseUntil.IsZero() {
		steps = append(steps, step{at: d.LeaseUntil, what: "held by a sender until", order: 3})
	}
	sort.SliceStable(steps, func(i, j int) bool {
		if !steps[i].at.Equal(steps[j].at) {
			return steps[i].at.Before(steps[j].at)
		}
		return steps[i].order < steps[j].order
	})
	return steps
}

// attemptDetail is how an attempt ended: its outcome, the subscriber's
// status or the failure's class, how long the handler ran, and the start
// of the answer, quoted (as an incident's error quotes it).
func attemptDetail(a outbox.Attempt) string {
	s := string(a.Outcome)
	switch {
	case a.Status != 0 && a.Error != "":
		s += fmt.Sprintf(" %d %s", a.Status, a.Error)
	case a.Status != 0:
		s += fmt.Sprintf(" %d", a.Status)
	case a.Error != "":
		s += " " + a.Error
	}
	if a.Outcome != outbox.OutcomeLost {
		s += " in " + (time.Duration(a.DurationMs) * time.Millisecond).String()
	}
	switch {
	case a.AnswerErased:
		s += fmt.Sprintf(": answer erased (%d bytes)", a.AnswerBytes)
	case a.Answer != "":
		s += ": " + strconv.Quote(a.Answer)
	}
	return s
}

func lastError(d operator.DispatchView) string {
	if d.LastError == "" {
		return ""
	}
	return "last error: " + d.LastError
}

func newEventsAttemptsCmd(t *target) *cobra.Command {
	var (
		in     operator.AttemptsIn
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "attempts <event-id> [--tenant <tenant>] [--topic T] [--outcome O] [--delivery D]",
		Short: "List an event's delivery attempts, filtered by topic, outcome or delivery",
		Long: "Lists every delivery attempt of an event that its dispatch rows keep (the latest 100 per topic, the\n" +
			"latest 10 with the subscriber's answer). --outcome: delivered, failed, held, dead_lettered, lost;\n" +
			"--delivery: original, retry, replay, probe.",
		Example: "  evp events attempts evt_1PzB7sLkdIwHu7ixQm3nT0aX --outcome failed\n  evp events attempts inq_42 --tenant acme --topic crm.sync",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			op, err := t.actions(cmd.Context())
			if err != nil {
				return err
			}
			var v operator.AttemptsView
			c := operator.Call{Action: operator.ActionAttempts, EventID: args[0], TenantID: in.TenantID, Topic: in.Topic, Outcome: in.Outcome, Delivery: in.Delivery}
			if err := op.call(cmd.Context(), c, &v); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, v)
			}
			tw := table(out)
			fmt.Fprintln(tw, "TOPIC\t#\tAT\tDELIVERY\tOUTCOME\tSTATUS\tTOOK\tANSWER")
			for _, a := range v.Attempts {
				status := orDash(a.Error)
				if a.Status != 0 {
					status = strconv.Itoa(a.Status)
				}
				answer := "-"
				switch {
				case a.AnswerErased:
					answer = fmt.Sprintf("(erased, %d bytes)", a.AnswerBytes)
				case a.Answer != "":
					answer = clip(strconv.Quote(a.Answer), 60)
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Topic, a.N, ts(a.At), orDash(string(a.Delivery)), a.Outcome, status,
					time.Duration(a.DurationMs)*time.Millisecond, answer)
			}
			_ = tw.Flush()
			fmt.Fprintf(out, "\n%d attempts\n", len(v.Attempts))
			for topic, n := range v.Dropped {
				fmt.Fprintf(out, "%s: the %d earliest attempts are no longer kept\n", topic, n)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&in.TenantID, "tenant", "", "the event's tenant (required for an internal producer's event)")
	f.StringVar(&in.Topic, "topic", "", "only this topic's attempts")
	f.StringVar(&in.Outcome, "outcome", "", "only attempts that ended so: delivered, failed, held, dead_lettered, lost")
	f.StringVar(&in.Delivery, "delivery", "", "only attempts of this delivery: original, retry, replay, probe")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newEventsListCmd(t *target) *cobra.Command {
	var (
		q      operator.Query
		status string
		pg     paging
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list --tenant <tenant> [--since …] [--type …] [--subject …|--customer …] [--status …]",
		Short: "List a tenant's events, newest first, with their status",
		Long: "Lists a tenant's events newest first, accepted in a time window and filtered by type, subject, Stripe\n" +
			"customer and status (docs/operations.md \"Finding events\" says what each filter reads). One page at a time:\n" +
			"--limit sets its size, --cursor continues, --all fetches every page.",
		Example: "  evp events list --tenant acme --since 1h\n" +
			"  evp events list --tenant acme --customer cus_Q2x8 --all\n" +
			"  evp events list --tenant acme --type stripe.invoice.payment_failed --status dlq --since 7d",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if q.TenantID == "" {
				return fmt.Errorf("--tenant is required")
			}
			if status != "any" {
				q.Status = incident.Status(status)
			}
			op, err := t.actions(cmd.Context())
			if err != nil {
				return err
			}
			q.Limit = pg.limit
			all := operator.EventPage{Events: []operator.EventBrief{}}
			next, err := pg.fetch(cmd.Context(), func(cursor string) (string, error) {
				q.Cursor = cursor
				var page operator.EventPage
				if err := op.call(cmd.Context(), operator.Call{Action: operator.ActionEvents, Query: &q}, &page); err != nil {
					return "", err
				}
				all.Events = append(all.Events, page.Events...)
				return page.Next, nil
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				all.Next = next
				return writeJSON(out, all)
			}
			tw := table(out)
			fmt.Fprintln(tw, "EVENT\tTYPE\tSOURCE\tSTATUS\tACCEPTED\tTOPICS\tSUBJECT")
			for _, e := range all.Events {
				who := e.Subject
				if e.Customer != "" {
					if who != "" {
						who += ", "
					}
					who += "customer " + e.Customer
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", clip(e.EventID, 40), e.Type, e.Source, e.Status, ts(e.CreatedAt), strings.Join(e.Topics, ","), orDash(who))
			}
			_ = tw.Flush()
			fmt.Fprintf(out, "\n%d events\n", len(all.Events))
			more(out, next)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.TenantID, "tenant", "", "the tenant (required)")
	f.StringVar(&q.Since, "since", "", "accepted since: an age (1h, 7d) or RFC 3339")
	f.StringVar(&q.Until, "until", "", "accepted before: an age or RFC 3339")
	f.StringVar(&q.Type, "type", "", "only events of this type (e.g. stripe.invoice.paid)")
	f.StringVar(&q.Subject, "subject", "", "only events about this subject (the envelope's subject)")
	f.StringVar(&q.Customer, "customer", "", "only events of this Stripe customer (cus_…)")
	f.StringVar(&status, "status", "any", "received, enqueued, completed, failed, dlq, expired, or any")
	pg.flags(cmd, operator.DefaultEventPage, operator.MaxEventPage)
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
