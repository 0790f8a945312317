package platform

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/topology"
)

const deployDoc = "../../../docs/deploy.md"

// docTable returns the backticked names in one column of the first table
// under a "## " heading of docs/deploy.md.
func docTable(t *testing.T, heading string, column int) []string {
	t.Helper()
	b, err := os.ReadFile(deployDoc)
	require.NoError(t, err)
	doc := string(b)
	i := strings.Index(doc, "\n## "+heading)
	require.GreaterOrEqual(t, i, 0, "docs/deploy.md has a section %q", heading)
	section := doc[i+1:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	tick := regexp.MustCompile("`([^`]+)`")
	var names []string
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			if rows > 0 {
				break
			}
			continue
		}
		rows++
		cells := strings.Split(line, "|")
		// Row 1 is the header, row 2 the separator.
		if rows <= 2 || len(cells) <= column+1 {
			continue
		}
		for _, m := range tick.FindAllStringSubmatch(cells[column+1], -1) {
			names = append(names, m[1])
		}
	}
	sort.Strings(names)
	return names
}

// The settings table of docs/deploy.md names exactly the keys stage.go
// reads (Stage's JSON keys).
func TestDeployDocsListEverySetting(t *testing.T) {
	t.Parallel()
	var keys []string
	st := reflect.TypeOf(Stage{})
	for i := range st.NumField() {
		if k := strings.Split(st.Field(i).Tag.Get("json"), ",")[0]; k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	require.Equal(t, keys, docTable(t, "Stage settings", 0))
}

// The outputs table names every stack output (of either stage).
func TestDeployDocsListEveryOutput(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, s := range []*synth{prod, dev} {
		for id := range s.tpl.Outputs {
			seen[id] = true
		}
	}
	require.Equal(t, sortedKeys(seen), docTable(t, "Outputs and stage discovery", 1))
}

// The alarms table names every kind of alarm the stack creates, with the
// topic or function part written <topic> / <function>.
func TestDeployDocsListEveryAlarm(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, s := range []*synth{prod, dev} {
		for _, a := range s.tpl.ofType("AWS::CloudWatch::Alarm") {
			name := strings.TrimPrefix(str(a.Properties["AlarmName"]), s.p.Stage.Prefix()+"-")
			for _, tp := range s.p.Topology.Topics {
				if rest, ok := strings.CutPrefix(name, slug(tp.Name)+"-"); ok {
					name = "<topic>-" + rest
				}
			}
			for fn := range s.p.Functions {
				if name == fn+"-errors" {
					name = "<function>-errors"
				}
			}
			seen[name] = true
		}
	}
	require.Equal(t, sortedKeys(seen), docTable(t, "Alarms", 0))
}

// The Stripe event types docs/deploy.md says to subscribe the endpoint to
// are the routed ones: each is routed (its "stripe." type matches a route)
// and each Stripe route has some listed, so the list follows the topology.
func TestDeployDocsListTheStripeEventsToSubscribe(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(deployDoc)
	require.NoError(t, err)
	doc := string(b)
	i := strings.Index(doc, "<!-- stripe-event-types -->")
	require.GreaterOrEqual(t, i, 0, "docs/deploy.md marks its Stripe event type list")
	block := doc[i:]
	start := strings.Index(block, "```\n")
	end := strings.Index(block[start+4:], "```")
	require.True(t, start >= 0 && end >= 0, "the list is a code block")
	listed := strings.Fields(block[start+4 : start+4+end])
	require.NotEmpty(t, listed)

	top := topology.Default()
	var stripeRoutes []string
	for _, r := range top.Routes {
		if strings.HasPrefix(r.Pattern, "stripe.") {
			stripeRoutes = append(stripeRoutes, r.Pattern)
		}
	}
	require.NotEmpty(t, stripeRoutes)
	covered := map[string]bool{}
	for _, typ := range listed {
		require.NotEmpty(t, top.Route("stripe."+typ), "%s is listed but not routed", typ)
		for _, p := range stripeRoutes {
			if topology.Match(p, "stripe."+typ) {
				covered[p] = true
			}
		}
	}
	for _, p := range stripeRoutes {
		require.True(t, covered[p], "route %s has no listed Stripe event type", p)
	}
}
