package main

import (
	"errors"
	"fmt"
	"io"
	"os/user"

	"github.com/spf13/cobra"

	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/retention"
)

func init() { commands = append(commands, newTenantsCmd) }

func newTenantsCmd() *cobra.Command {
	t := &target{}
	cmd := &cobra.Command{
		Use:   "tenants",
		Short: "Per-tenant settings: the retention policy",
		Long: "Talks to the replay function of the local `make dev` stack, or of a deployed stage with --stage\n" +
			"(the admin API serves the same: GET/PUT /admin/tenants/{tenant}/retention).",
	}
	t.flags(cmd)
	ret := &cobra.Command{
		Use:   "retention",
		Short: "Show or set how long a tenant's events, incidents, audit archive and exports are kept",
		Long: "A tenant's retention policy: events (ledger items and payloads; 7 days up to the stage's ledger retention),\n" +
			"incidents once resolved or ignored, audit archive days and exports (1 to 3650 days; exports up to 365).\n" +
			"0 is the platform default (events: the ledger retention; the rest: kept). A shorter period starts a\n" +
			"retention-expiry job at once; a daily one per tenant with a policy keeps applying it. See docs/operations.md.",
	}
	ret.AddCommand(newRetentionGetCmd(t), newRetentionSetCmd(t))
	cmd.AddCommand(ret)
	return cmd
}

func newRetentionGetCmd(t *target) *cobra.Command {
	var tenant string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "get --tenant <tenant>",
		Short:   "Show a tenant's policy, what applies, and the platform defaults",
		Example: "  evp tenants retention get --tenant acme",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tenant == "" {
				return errors.New("--tenant is required")
			}
			op, err := t.actions(cmd.Context())
			if err != nil {
				return err
			}
			var v retention.View
			if err := op.call(cmd.Context(), operator.Call{Action: operator.ActionRetentionGet, TenantID: tenant}, &v); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			renderRetention(cmd.OutOrStdout(), v)
			return nil
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newRetentionSetCmd(t *target) *cobra.Command {
	var (
		tenant                  string
		events, incidents, arch int
		exports, ifVersion      int
		asJSON                  bool
	)
	cmd := &cobra.Command{
		Use:   "set --tenant <tenant> [--events-days N] [--incidents-days N] [--archives-days N] [--exports-days N]",
		Short: "Replace a tenant's policy (a period left out or 0 is the platform default)",
		Example: "  evp tenants retention set --tenant acme --events-days 14 --incidents-days 90 --archives-days 365 --exports-days 30\n" +
			"  evp tenants retention set --tenant acme --exports-days 7 --if-version 3",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tenant == "" {
				return errors.New("--tenant is required")
			}
			op, err := t.actions(cmd.Context())
			if err != nil {
				return err
			}
			c := operator.Call{Action: operator.ActionRetentionSet, TenantID: tenant, EventsDays: events, IncidentsDays: incidents,
				ArchivesDays: arch, ExportsDays: exports, Actor: operatorName()}
			if cmd.Flags().Changed("if-version") {
				c.IfVersion = &ifVersion
			}
			var v retention.View
			if err := op.call(cmd.Context(), c, &v); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			renderRetention(cmd.OutOrStdout(), v)
			if v.Purge != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "a period got shorter: retention expiry %s applies it to what is stored (`evp jobs view %s --wait`)\n", v.Purge.ID, v.Purge.ID)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant")
	cmd.Flags().IntVar(&events, "events-days", 0, "days events are kept (0: the ledger retention)")
	cmd.Flags().IntVar(&incidents, "incidents-days", 0, "days a resolved or ignored incident is kept (0: kept)")
	cmd.Flags().IntVar(&arch, "archives-days", 0, "days of the audit archive kept (0: kept)")
	cmd.Flags().IntVar(&exports, "exports-days", 0, "days an export is kept (0: kept)")
	cmd.Flags().IntVar(&ifVersion, "if-version", 0, "refuse unless the stored policy is at this version (0: none stored yet)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// operatorName is who the policy records as its author: the OS user.
func operatorName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "evp:" + u.Username
	}
	return "evp"
}

func renderRetention(w io.Writer, v retention.View) {
	kept := func(d int) string {
		if d == 0 {
			return "kept"
		}
		return fmt.Sprintf("%d days", d)
	}
	fmt.Fprintf(w, "tenant %s, policy version %d\n", v.Policy.TenantID, v.Policy.Version)
	fmt.Fprintf(w, "  %-10s %-14s %-14s %s\n", "", "policy", "applies", "default")
	row := func(name string, p, e, d int) {
		fmt.Fprintf(w, "  %-10s %-14s %-14s %s\n", name, fmt.Sprint(p), kept(e), kept(d))
	}
	row("events", v.Policy.EventsDays, v.Effective.EventsDays, v.Defaults.EventsDays)
	row("incidents", v.Policy.IncidentsDays, v.Effective.IncidentsDays, v.Defaults.IncidentsDays)
	row("archives", v.Policy.ArchivesDays, v.Effective.ArchivesDays, v.Defaults.ArchivesDays)
	row("exports", v.Policy.ExportsDays, v.Effective.ExportsDays, v.Defaults.ExportsDays)
}
