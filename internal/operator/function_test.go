package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

const topic = topology.Billing

var t0 = testkit.T0

// bundle is the replay function as its Lambda builds it (wire/replayfn),
// on a fresh environment.
type bundle struct {
	env       *awslocaltest.Env
	fn        *operator.Function
	incidents *dynamo.Incidents
}

func setup(t testing.TB) *bundle {
	t.Helper()
	env := awslocaltest.NewEnv(t)
	return &bundle{
		env:       env,
		fn:        wiretest.ReplayFunction(t, env, wiretest.Opts{}),
		incidents: env.Incidents(),
	}
}

// seed stores a dead-lettered billing dispatch and its open incident.
func (b *bundle) seed(t testing.TB, eventID, tenant string, created time.Time) incident.Incident {
	t.Helper()
	return testkit.SeedDeadLetter(t, b.env, testkit.DeadLetter{EventID: eventID, TenantID: tenant, Topic: topic, Created: created})
}

// call runs the Lambda handler on a JSON input and returns its JSON output.
func call(t *testing.T, b *bundle, input string) (map[string]any, error) {
	t.Helper()
	out, err := b.fn.Handle(context.Background(), json.RawMessage(input))
	require.NoError(t, err, "bad input is an answer, never a function error")
	if r, ok := out.(operator.Refusal); ok {
		require.NotEmpty(t, r.Error.Code)
		require.NotEmpty(t, r.Error.Message)
		return nil, r.Error
	}
	raw, err := json.Marshal(out)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m, nil
}

// TestStateMachineContract drives the replay function exactly as the Step
// Functions state machine does (docs/operations.md): select a page with the
// execution input as request, run replay-one for each id (the Map), fold
// the outcomes with summarize, and loop on the cursor until done.
func TestStateMachineContract(t *testing.T) {
	t.Parallel()
	p := setup(t)
	var want []string
	for i := range 5 {
		want = append(want, p.seed(t, fmt.Sprintf("evt_sm_%d", i), "acme", t0.Add(time.Duration(i)*time.Minute)).ID)
	}
	p.seed(t, "evt_sm_other", "globex", t0)
	execInput := `{"tenantId":"acme","topic":"billing.events","actor":"console-user","note":"INC-42 fixed"}`

	state := map[string]any{"cursor": "", "totals": nil}
	for loops := 0; ; loops++ {
		require.Less(t, loops, 10)
		in, _ := json.Marshal(map[string]any{"action": "select", "request": json.RawMessage(execInput), "cursor": state["cursor"], "pageSize": 2})
		page, err := call(t, p, string(in))
		require.NoError(t, err)
		var results []json.RawMessage
		for _, id := range page["incidentIds"].([]any) {
			item, _ := json.Marshal(map[string]any{"action": "replay-one", "incidentId": id, "request": json.RawMessage(execInput)})
			o, err := call(t, p, string(item))
			require.NoError(t, err)
			b, _ := json.Marshal(o)
			results = append(results, b)
		}
		sin, _ := json.Marshal(map[string]any{"action": "summarize", "results": results, "totals": state["totals"],
			"selected": page["selected"], "request": json.RawMessage(execInput)})
		totals, err := call(t, p, string(sin))
		require.NoError(t, err)
		state["totals"], state["cursor"] = totals, page["cursor"]
		if page["done"] == true {
			break
		}
	}
	var sum replay.Summary
	b, _ := json.Marshal(state["totals"])
	require.NoError(t, json.Unmarshal(b, &sum))
	require.Equal(t, 5, sum.Selected)
	require.ElementsMatch(t, want, sum.Replayed)
	require.Empty(t, sum.Skipped)
	require.Empty(t, sum.Errors)
	for _, id := range want {
		inc, err := p.incidents.Get(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, incident.StatusRetrying, inc.Status)
		last := inc.History[len(inc.History)-1]
		require.Equal(t, "console-user", last.By)
		require.Equal(t, "INC-42 fixed", last.Note)
	}
}

func TestOperatorActions(t *testing.T) {
	t.Parallel()
	p := setup(t)
	inc := p.seed(t, "evt_ops", "acme", t0)

	page, err := call(t, p, `{"action":"list","query":{"status":"open","tenantId":"acme"}}`)
	require.NoError(t, err)
	require.Len(t, page["incidents"], 1)

	view, err := call(t, p, `{"action":"get","incidentId":"`+inc.ID+`"}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"invoice": "evt_ops"}, view["payload"])
	require.Equal(t, inc.EventID, view["eventId"])

	got, err := call(t, p, `{"action":"triage","incidentId":"`+inc.ID+`","actor":"ada","note":"on it"}`)
	require.NoError(t, err)
	require.Equal(t, "triaged", got["status"])
	_, err = call(t, p, `{"action":"triage","incidentId":"`+inc.ID+`","actor":"ada"}`)
	var re *replay.RequestError
	require.ErrorAs(t, err, &re, "triaged → triaged is refused")
	require.Equal(t, "transition_not_allowed", re.Code)
	_, err = call(t, p, `{"action":"ignore","incidentId":"`+inc.ID+`"}`)
	require.ErrorAs(t, err, &re, "an actor is required")

	ev, err := call(t, p, `{"action":"event","eventId":"evt_ops"}`)
	require.NoError(t, err)
	require.Equal(t, "dlq", ev["status"])
	d := ev["dispatches"].([]any)[0].(map[string]any)
	require.Equal(t, inc.ID, d["incident"].(map[string]any)["incidentId"])

	evs, err := call(t, p, `{"action":"events","query":{"tenantId":"acme"}}`)
	require.NoError(t, err)
	require.Len(t, evs["events"], 1)

	for _, bad := range []string{`{}`, `{"action":"nope"}`, `[1]`, `{"action":"get","incidentId":"inc_00000000000000000000000000000000"}`,
		`{"action":"replay-one","incidentId":"x"}`, `{"action":"list","query":{"since":"yesterday"}}`,
		`{"action":"get","action":"list"}`, `{"action":"list","bogus":1}`, `{"action":"replay-one","incidentId":"` + inc.ID + `","requestToken":"a b"}`} {
		_, err := call(t, p, bad)
		require.ErrorAs(t, err, &re, bad)
	}
}
