package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
)

func init() { commands = append(commands, newTopicsCmd) }

func newTopicsCmd() *cobra.Command {
	t := &target{}
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "Topics' subscriber health: list states, pause a topic's deliveries, resume them",
		Long: "Talks to the replay function of the local `make dev` stack, or of a deployed stage with --stage, and tells the\n" +
			"subscriber-health function so a pause or resume applies at once. A paused topic's queue holds its events\n" +
			"(nothing is dead-lettered) until an operator resumes it; docs/operations.md \"Subscriber health\".",
	}
	t.flags(cmd)
	cmd.AddCommand(newTopicsListCmd(t), newTopicChangeCmd(t, "pause"), newTopicChangeCmd(t, "resume"))
	return cmd
}

func newTopicsListCmd(t *target) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Every topic with its subscriber's health (closed, open, half_open, paused)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			op, err := t.actions(cmd.Context())
			if err != nil {
				return err
			}
			var out operator.TopicsOut
			if err := op.call(cmd.Context(), operator.Call{Action: operator.ActionTopicsList}, &out); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			tw := table(cmd.OutOrStdout())
			fmt.Fprintln(tw, "TOPIC\tSTATE\tSINCE\tPROBE AT\tREASON\tLAST ERROR")
			for _, v := range out.Topics {
				h := v.Health
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.Topic, h.State, ts(h.Since), ts(h.ProbeAt), dash(h.Reason), dash(h.LastError))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newTopicChangeCmd(t *target, action string) *cobra.Command {
	var (
		reason, actor string
		asJSON        bool
	)
	short := "Pause a topic: its deliveries stop and its queue holds the events until it is resumed"
	call := operator.ActionTopicsPause
	if action == "resume" {
		short, call = "Resume a paused topic: its backlog drains at a ramped concurrency", operator.ActionTopicsResume
	}
	cmd := &cobra.Command{
		Use:   action + " <topic>",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			op, err := t.actions(cmd.Context())
			if err != nil {
				return err
			}
			var v subscriberhealth.TopicView
			if err := op.call(cmd.Context(), operator.Call{Action: call, Topic: args[0], Actor: actor, Note: reason}, &v); err != nil {
				return err
			}
			applied := "applied now"
			if err := op.notifyHealth(cmd.Context(), args[0]); err != nil {
				applied = "applied by the subscriber-health function's next run (within a minute): " + err.Error()
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s (%s); %s\n", v.Topic, v.Health.State, v.Health.Reason, applied)
			return nil
		},
	}
	if action == "pause" {
		cmd.Flags().StringVar(&reason, "reason", "", "why (shown with the topic's state)")
	}
	cmd.Flags().StringVar(&actor, "actor", "", "who (default: evp)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
