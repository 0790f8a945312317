package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

func newDevCmd() *cobra.Command {
	var (
		addr, prefix, profile, level string
		jsonLogs                     bool
		sweepEvery, logSummary       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "evp-dev",
		Short: "Run the whole platform locally on embedded emulators",
		Long: "Starts emulated DynamoDB, SQS, SNS and S3 (or uses real endpoints when AWS_ENDPOINT_URL or --profile\n" +
			"is given), provisions every table, queue and bucket from the topology, and runs every function's real\n" +
			"handler on one address: HTTP routes as API Gateway would call them, the Lambda Invoke API, an SQS\n" +
			"poller per queue and the sweeper's schedule. Settings come from the environment (see\n" +
			"docs/local-development.md). Ctrl-C stops everything, child processes included.",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, closeLog := devLogger(cmd.ErrOrStderr(), jsonLogs, level, logSummary)
			defer closeLog()
			settings := map[string]string{}
			if sweepEvery > 0 {
				settings[devstack.SettingSweepEvery] = sweepEvery.String()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			st, err := devstack.Start(ctx, devstack.Options{Addr: addr, Prefix: prefix, Profile: profile, Log: log, Settings: settings, DynamoDB: awslocal.DynamoAuto})
			if err != nil {
				return err
			}
			st.Banner(cmd.OutOrStdout())
			done := make(chan struct{})
			defer close(done)
			go forceQuitOnSecondSignal(ctx, done, cmd.ErrOrStderr())
			<-ctx.Done()
			log.Info("devstack: stopping (Ctrl-C again to quit at once)", "function", "evp")
			return st.Wait(ctx)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", devstack.DefaultAddr, "listen address (127.0.0.1:0 picks a free port)")
	cmd.Flags().BoolVar(&jsonLogs, "json", false, "log JSON lines (as in Lambda) instead of the terminal format")
	cmd.Flags().StringVar(&level, "log-level", "", "DEBUG, INFO, WARN or ERROR (default: AWS_LAMBDA_LOG_LEVEL, else INFO); DEBUG prints a line per request")
	cmd.Flags().DurationVar(&logSummary, "log-summary", 10*time.Second, "count the informational lines of each request and print what was counted this often (0: a line per request); warnings and errors print at once")
	cmd.Flags().DurationVar(&sweepEvery, "sweep-every", 0, "run the outbox sweeper this often (default 2m, as deployed)")
	cmd.Flags().StringVar(&profile, "profile", "", "use real AWS through this shared-config profile instead of the emulators")
	cmd.Flags().StringVar(&prefix, "prefix", "", "resource name prefix (default \"local\"; behind real endpoints \"evp-local-<user>\")")
	return cmd
}

// devLogger is the readable terminal format (coloured on a terminal unless
// NO_COLOR is set), or JSON lines with --json. Unless summary is 0 or the
// level is DEBUG, a request's informational lines are counted and
// summarized every summary period (see summary); close prints the last
// count.
func devLogger(w io.Writer, jsonLogs bool, level string, summary time.Duration) (*slog.Logger, func()) {
	o := logging.Options{Format: logging.Pretty, Color: logging.IsTerminal(w) && os.Getenv("NO_COLOR") == ""}
	if jsonLogs {
		o.Format = logging.JSON
	}
	if level != "" {
		o.Level = logging.ParseLevel(level)
	}
	l := logging.New(w, o)
	closeLog := func() {}
	if summary > 0 && !l.Enabled(context.Background(), slog.LevelDebug) {
		h, closeSummary := newSummary(l.Handler(), summary)
		l, closeLog = slog.New(h), closeSummary
		l.Info(fmt.Sprintf("devstack: each request's log lines are counted and summarized every %s (--log-summary 0 or --log-level DEBUG: a line each); warnings and errors print at once", summary), "function", "evp")
	}
	slog.SetDefault(l)
	return l, closeLog
}

// forceQuitOnSecondSignal exits at once on a second Ctrl-C while shutdown
// waits for in-flight invocations. The emulator child still goes: it exits
// when its stdin (held by this process) closes.
func forceQuitOnSecondSignal(ctx context.Context, done <-chan struct{}, w io.Writer) {
	select {
	case <-ctx.Done():
	case <-done:
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	select {
	case <-sig:
		fmt.Fprintln(w, "evp: forced quit")
		os.Exit(130)
	case <-done:
	}
}
