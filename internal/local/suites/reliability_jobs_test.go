package suites_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/local/devstack/devstacktest"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// cmsPublished is a CMS content.published event: one purge job of two
// tags.
func cmsPublished(id string) []byte {
	return mustMarshal(map[string]any{
		"id": id, "tenantId": "clk-construction", "type": "content.published", "source": "cms",
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "subject": "projects/" + id,
		"payload": map[string]any{"tags": []string{"tenant:clk-construction:page:/" + id, "tenant:clk-construction:projects:" + id}, "path": "/" + id},
	})
}

// Scenario 9: durable jobs with 30% of their wakes failing to send and 30%
// of their S3 writes failing, and cache purges with 30% of purge API calls
// failing (503): every job ends completed, or failed with an incident an
// operator can replay — none is left running or forgotten.
func TestReliabilityJobsAndPurges(t *testing.T) {
	r := startReliabilityStack(t, map[string]string{devstack.SettingJobsSweepEvery: "1s", "JOBS_BACKOFF_BASE": "1s"})
	ctx := context.Background()
	events, exports, purges := size(40, 200), size(10, 100), size(30, 300)

	// Something to export: the tenant's events.
	r.publish(ids("inq_rel9", events), 16)
	r.waitComplete(fanOut, 60*time.Second)

	r.faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessage", Resource: r.st.Resources.JobsQueue.URL, Probability: 0.3})
	r.faults.Add(awslocal.Fault{Service: "S3", Operation: "PutObject", Probability: 0.3})
	r.st.Purges.Fail(&cachepurge.LocalFailure{Status: http.StatusServiceUnavailable, Rate: 0.3, First: 1})
	start := time.Now()

	jobIDs := make([]string, exports)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range exports {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			status, res := devstacktest.AdminDo(t, r.st, http.MethodPost, "/admin/jobs", map[string]any{
				"kind": "tenant-export", "tenantId": "acme", "idempotencyKey": fmt.Sprintf("rel9-%d", i), "args": map[string]any{"pageSize": 25},
			})
			require.Contains(t, []int{http.StatusAccepted, http.StatusCreated}, status, res)
			jobIDs[i], _ = res["jobId"].(string)
		})
	}
	purgeEvents := ids("cms_rel9", purges)
	for _, id := range purgeEvents {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var res map[string]any
			require.NoError(t, json.Unmarshal(r.invokeRaw("ingest", cmsPublished(id)), &res))
			require.Contains(t, []any{"enqueued", "accepted"}, res["status"], res)
		})
	}
	wg.Wait()

	// Wait until every job and purge has ended one way or the other.
	jobEnd := map[string]map[string]any{}
	purgeEnd := map[string]string{}
	purgesRetried := 0
	purgeIncident := func(eventID string) bool {
		_, err := r.incidents.Get(ctx, incident.ID("clk-construction/"+eventID, topology.CachePurge))
		return err == nil
	}
	deadline := time.Now().Add(time.Duration(exports+purges+240) * time.Second)
	for time.Now().Before(deadline) && (len(jobEnd) < exports || len(purgeEnd) < purges) {
		for _, id := range jobIDs {
			if _, done := jobEnd[id]; done {
				continue
			}
			if _, job := devstacktest.AdminDo(t, r.st, http.MethodGet, "/admin/jobs/"+id, nil); job["status"] == "completed" || job["status"] == "failed" && job["incidentId"] != nil && job["dueAt"] == nil {
				// A failed job is due until its incident is confirmed.
				jobEnd[id] = job
			}
		}
		for _, ev := range purgeEvents {
			if _, done := purgeEnd[ev]; done {
				continue
			}
			var st map[string]any
			_ = json.Unmarshal(r.invokeRaw("purge-api", mustMarshal(map[string]any{"op": "getPurgeStatus", "jobId": cachepurge.JobIDForEvent("clk-construction", ev)})), &st)
			switch {
			case st["status"] == "completed":
				purgeEnd[ev] = "completed"
				if n, _ := st["retryCount"].(float64); n > 0 {
					purgesRetried++
				}
			case st["status"] != "processing" && purgeIncident(ev): // failed for good, or refused
				purgeEnd[ev] = "incident"
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	end := time.Now()
	purgeCallsFailed := r.st.Purges.FailedCalls()
	r.st.Purges.Fail(nil)

	f := figures{Scenario: "9. durable jobs and cache purges, 30% of wakes, S3 writes and purge API calls failing", Sent: exports + purges,
		Acked: exports + purges, Delivered: map[string]int{"jobs completed": 0, "purges completed": 0}}
	for _, id := range jobIDs {
		switch job, ok := jobEnd[id]; {
		case !ok:
			f.Lost++
		case job["status"] == "completed":
			f.Delivered["jobs completed"]++
		default:
			inc, err := r.incidents.Get(ctx, job["incidentId"].(string))
			require.NoError(t, err, "a failed job's incident exists")
			require.Equal(t, "jobs.tenant-export", inc.Topic)
			f.Incidents++
		}
	}
	for _, ev := range purgeEvents {
		switch purgeEnd[ev] {
		case "":
			f.Lost++
		case "completed":
			f.Delivered["purges completed"]++
		default:
			f.Incidents++
		}
	}
	if d := end.Sub(start).Seconds(); d > 0 {
		f.PerSecond = float64(f.Sent) / d
	}
	f.Note = fmt.Sprintf("%d exports of %d events in parts of 25, %d purge jobs; injected: %d wake sends, %d S3 writes failed; purge API failing 30%% (503, the first call always): %d calls failed, %d purges completed after a retry; all ended in %s",
		exports, events, purges, r.faults.Injected("SendMessage"), r.faults.Injected("PutObject"), purgeCallsFailed, purgesRetried, end.Sub(start).Round(time.Second))
	record(t, f)
	require.Zero(t, f.Lost, "every job ends completed or as an incident")
	require.Positive(t, r.faults.Injected("SendMessage"), "wakes failed")
	require.Positive(t, purgeCallsFailed, "purge calls failed")
	require.Positive(t, purgesRetried+f.Incidents, "a failed purge call shows as a retry or an incident")
	require.Positive(t, f.Delivered["jobs completed"]+f.Delivered["purges completed"])
}
