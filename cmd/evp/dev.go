package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/siteswarm/eventplatform/internal/devstack"
)

func init() { commands = append(commands, newDevCmd) }

func newDevCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole platform locally on embedded emulators",
		Long: "Starts emulated DynamoDB, SQS and S3, provisions every table, queue and bucket from the topology,\n" +
			"and serves the functions on one address. Ctrl-C stops everything.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
			st, err := devstack.Start(cmd.Context(), devstack.Options{Addr: addr, Log: log})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "event platform running at %s\n", st.URL())
			fmt.Fprintf(out, "  health:  curl %s/healthz\n", st.URL())
			fmt.Fprintf(out, "  publish: curl -X POST %s/2015-03-31/functions/ingest/invocations -d @events/ingest/valid/storefront-inquiry-created.json\n", st.URL())
			fmt.Fprintln(out, "Ctrl-C to stop.")
			return st.Wait(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&addr, "addr", devstack.DefaultAddr, "listen address")
	return cmd
}
