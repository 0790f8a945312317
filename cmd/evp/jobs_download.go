package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siteswarm/eventplatform/internal/operator"
)

func newJobsDownloadCmd(t *target) *cobra.Command {
	var (
		dir   string
		force bool
	)
	cmd := &cobra.Command{
		Use:   "download <job-id> -o <dir>",
		Short: "Download a finished tenant export: its manifest and every part, checksums verified",
		Long: "Asks the stage (or the local stack) for short-lived presigned URLs of the export's objects and fetches\n" +
			"them into the directory (created if missing): manifest.json and the gzip NDJSON parts, each part checked\n" +
			"against the SHA-256 its manifest records. Nothing is overwritten without --force.",
		Example: "  evp jobs download job_0123… -o ./acme-export",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return fmt.Errorf("-o <dir> is required: where to write the export")
			}
			op, err := t.actions(cmd.Context())
			if err != nil {
				return err
			}
			var d operator.ExportDownload
			if err := op.call(cmd.Context(), operator.Call{Action: operator.ActionJobDownload, JobID: args[0]}, &d); err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			tw := table(out)
			total := 0
			for _, o := range d.Objects {
				n, err := fetch(cmd.Context(), o, filepath.Join(dir, filepath.Base(o.Name)), force)
				if err != nil {
					return err
				}
				total += n
				what := "manifest"
				if o.Records != "" {
					what = fmt.Sprintf("%d %s", o.Count, o.Records)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", filepath.Join(dir, filepath.Base(o.Name)), size(n), what)
			}
			_ = tw.Flush()
			fmt.Fprintf(out, "\nexport %s of %s: %d files, %s\n", d.JobID, d.TenantID, len(d.Objects), size(total))
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "output", "o", "", "directory to write the export into")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite files that exist")
	return cmd
}

// fetchTimeout bounds one object's download (a part is at most 64 MiB).
const fetchTimeout = 5 * time.Minute

// fetch downloads one object to path (through a temporary file, so a
// failed download leaves nothing behind), checking a part's SHA-256.
func fetch(ctx context.Context, o operator.DownloadObject, path string, force bool) (int, error) {
	if _, err := os.Stat(path); err == nil && !force {
		return 0, fmt.Errorf("%s exists: choose another directory or pass --force", path)
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.URL, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", o.Name, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("download %s: %w", o.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("download %s: %s: %s", o.Name, resp.Status, strings.TrimSpace(string(b)))
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".evp-download-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, sum), resp.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("download %s: %w", o.Name, err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); o.SHA256 != "" && got != o.SHA256 {
		return 0, fmt.Errorf("download %s: sha256 %s, the manifest says %s", o.Name, got, o.SHA256)
	}
	return int(n), os.Rename(tmp.Name(), path)
}
