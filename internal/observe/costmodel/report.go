package costmodel

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// Path is what one event costs on one path, per event.
type Path struct {
	Name string `json:"name"`
	What string `json:"what"`
	// Events is how many events the figures were measured over.
	Events int `json:"events"`
	// Requests per event per "Service.Operation" (empty ReceiveMessage
	// polls excluded: they cost per queue and hour, not per event).
	Requests map[string]float64 `json:"requests"`
	Units    Units              `json:"units"`
	// WRUByOperation splits Units.WRU by DynamoDB operation.
	WRUByOperation map[string]float64 `json:"wruByOperation,omitempty"`
	// Compute is how Units.LambdaGBSeconds was modelled, by function
	// role, summed over the path's invocations (Meter.Compute).
	Compute []RoleCompute `json:"compute,omitempty"`
	// Ack is the latency model's answer to the path's caller (a webhook's
	// provider: API Gateway's response), when the path has one.
	Ack *Answer `json:"ack,omitempty"`
}

// Mix weighs paths into a reference workload: path name → events of that
// path per event of the mix.
type Mix struct {
	Name  string             `json:"name"`
	What  string             `json:"what"`
	Parts map[string]float64 `json:"parts"`
}

// Report is every path and mix, as committed in docs/cost-figures.json.
type Report struct {
	Paths []Path `json:"paths"`
	Mixes []Mix  `json:"mixes"`
	// Peers are the architecture a team would build instead, priced
	// beside the mixes.
	Peers []Peer `json:"peers,omitempty"`
}

// Path returns the named path.
func (r Report) Path(name string) (Path, bool) {
	for _, p := range r.Paths {
		if p.Name == name {
			return p, true
		}
	}
	return Path{}, false
}

// MixUnits are a mix's units per event.
func (r Report) MixUnits(m Mix) Units {
	var u Units
	for name, w := range m.Parts {
		p, ok := r.Path(name)
		if !ok {
			continue
		}
		u.Add(p.Units.Scale(w))
	}
	return u
}

// ReadReport reads committed figures.
func ReadReport(path string) (Report, error) {
	var r Report
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(b, &r)
}

// WriteReport writes figures to commit.
func WriteReport(path string, r Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Growth lists what grew in got against the committed figures: request
// counts and the units that do not depend on timing (SQS, S3, SNS, API
// Gateway, invocations) beyond a rounding slack, DynamoDB units beyond 15%,
// log bytes beyond 10% and Lambda GB-seconds (modelled from the calls on
// each invocation's critical path, not timed: DurationModel) beyond 5%.
func Growth(committed, got Report) []string {
	var out []string
	for _, g := range got.Paths {
		c, ok := committed.Path(g.Name)
		if !ok {
			out = append(out, fmt.Sprintf("%s: a path with no committed figures (run `make bench`)", g.Name))
			continue
		}
		for op, n := range g.Requests {
			// A listing queries each tenant shard its page reaches, and
			// how a page's events fall over the shards varies with their
			// random ids: Query counts get the units' 15% (what they
			// bill is the RRU, held below); every other call is exact.
			slack := 0.0
			if op == "DynamoDB.Query" {
				slack = 0.15
			}
			if n > c.Requests[op]*(1+slack)+0.01 {
				out = append(out, fmt.Sprintf("%s: %s %.2f requests/event, committed %.2f", g.Name, op, n, c.Requests[op]))
			}
		}
		check := func(what string, got, was, slack float64) {
			if got > was*(1+slack)+0.01 {
				out = append(out, fmt.Sprintf("%s: %s %.3f/event, committed %.3f", g.Name, what, got, was))
			}
		}
		// DynamoDB units vary a little run to run: an ingest's send mark
		// and the consumer's claim of the same row race (the loser's write
		// is refused and billed), and timestamps vary in length.
		check("DynamoDB WRU", g.Units.WRU, c.Units.WRU, 0.15)
		check("DynamoDB RRU", g.Units.RRU, c.Units.RRU, 0.15)
		check("SQS requests", g.Units.SQSRequests, c.Units.SQSRequests, 0)
		check("SQS FIFO requests", g.Units.SQSFIFORequests, c.Units.SQSFIFORequests, 0)
		check("S3 tier-1 requests", g.Units.S3Tier1, c.Units.S3Tier1, 0)
		check("S3 tier-2 requests", g.Units.S3Tier2, c.Units.S3Tier2, 0)
		check("SNS requests", g.Units.SNSRequests, c.Units.SNSRequests, 0)
		check("Lambda invocations", g.Units.LambdaInvocations, c.Units.LambdaInvocations, 0)
		check("API Gateway requests", g.Units.APIRequests, c.Units.APIRequests, 0)
		check("log bytes", g.Units.LogBytes, c.Units.LogBytes, 0.10)
		check("EMF bytes", g.Units.EMFBytes, c.Units.EMFBytes, 0.10)
		check("data out bytes", g.Units.DataOutBytes, c.Units.DataOutBytes, 0.10)
		check("DynamoDB storage GB-months", g.Units.StorageGBMonths, c.Units.StorageGBMonths, 0.15)
		check("Step Functions transitions", g.Units.StateTransitions, c.Units.StateTransitions, 0)
		check("Lambda GB-seconds", g.Units.LambdaGBSeconds, c.Units.LambdaGBSeconds, 0.05)
		if g.Ack != nil && c.Ack != nil {
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			check("ack p50 ms", ms(g.Ack.P50), ms(c.Ack.P50), 0.05)
			check("ack p99 ms", ms(g.Ack.P99), ms(c.Ack.P99), 0.05)
		}
	}
	sort.Strings(out)
	return out
}

func usd(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("$%.0f", x)
	case x >= 1:
		return fmt.Sprintf("$%.2f", x)
	}
	return fmt.Sprintf("$%.3f", x)
}

func num(x float64) string {
	if x == math.Trunc(x) {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// Render writes the cost report (docs/cost.md) for r at prices p; header
// is the Markdown above the generated tables.
func Render(w io.Writer, r Report, p Prices, header string) {
	fmt.Fprint(w, header)
	fmt.Fprintf(w, "\n## Dollars per million events\n\nPrices: %s list prices as of %s (`internal/observe/costmodel/prices.go`).\n\n", p.Region, p.AsOf)
	fmt.Fprintln(w, "| mix | $ per million events | largest lines |")
	fmt.Fprintln(w, "|---|---:|---|")
	for _, m := range r.Mixes {
		u := r.MixUnits(m)
		var top []string
		for _, l := range p.Dollars(u)[:3] {
			top = append(top, fmt.Sprintf("%s %s", l.Item, usd(l.Dollars*1e6)))
		}
		fmt.Fprintf(w, "| **%s** — %s | **%s** | %s |\n", m.Name, m.What, usd(p.Total(u)*1e6), strings.Join(top, ", "))
	}
	for _, pe := range r.Peers {
		u := pe.Units()
		var top []string
		for _, l := range p.Dollars(u)[:3] {
			top = append(top, fmt.Sprintf("%s %s", l.Item, usd(l.Dollars*1e6)))
		}
		fmt.Fprintf(w, "| *Peer: %s* — %s | %s | %s |\n", pe.Name, pe.What, usd(p.Total(u)*1e6), strings.Join(top, ", "))
	}
	fmt.Fprintf(w, "| *Amazon EventBridge*, custom events alone (no dedupe, outbox, incidents, replay; targets extra) | %s | events put |\n", usd(p.EventBridgeEvent*1e6))
	fmt.Fprintf(w, "| *SNS → SQS fan-out, 1 topic*: publish, then receive + delete per subscriber queue (consumer Lambda extra) | %s | SNS %s, SQS %s |\n",
		usd((p.SNSRequest+2*p.SQSRequest)*1e6), usd(p.SNSRequest*1e6), usd(2*p.SQSRequest*1e6))

	for _, m := range r.Mixes {
		if m.Name != "Stripe reference" {
			continue
		}
		u := r.MixUnits(m)
		low := u
		low.Traces = 1
		fmt.Fprintf(w, "\nX-Ray below volume: the default sampling rule records the first request each second and %.0f%% of the rest, "+
			"so the figures above (%.0f%% of events traced, %s per million) hold at volume; at 1 event/s every event is traced: "+
			"X-Ray %s per million, the %s at 1 event/s %s.\n",
			u.Traces*100, u.Traces*100, usd(u.Traces*p.Trace*1e6), usd(p.Trace*1e6), m.Name, usd(p.Total(low)*1e6))
	}

	if len(r.Peers) > 0 {
		fmt.Fprint(w, peerNote)
		renderLines(w, r, p)
	}

	fmt.Fprintln(w, "\n## Per path, per event")
	fmt.Fprintln(w, "\n| path | $/M | WRU (index) | RRU | SQS req (FIFO) | S3 PUT/GET | Lambda inv | Lambda GB-s | API req | log bytes (EMF) | out bytes | stored KB-months | SFN transitions | traces |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, pa := range r.Paths {
		u := pa.Units
		fmt.Fprintf(w, "| %s | %s | %s (%s) | %s | %s (%s) | %s/%s | %s | %.5f | %s | %.0f (%.0f) | %.0f | %.3f | %s | %.3f |\n", pa.Name, usd(p.Total(u)*1e6),
			num(u.WRU), num(u.WRUIndex), num(u.RRU), num(u.SQSRequests+u.SQSFIFORequests), num(u.SQSFIFORequests), num(u.S3Tier1), num(u.S3Tier2), num(u.LambdaInvocations),
			u.LambdaGBSeconds, num(u.APIRequests), u.LogBytes+u.EMFBytes, u.EMFBytes, u.DataOutBytes, u.StorageGBMonths*(1<<20), num(u.StateTransitions), u.Traces)
	}
	renderCompute(w, r)
	fmt.Fprintln(w, "\n### Requests per event, by operation")
	for _, pa := range r.Paths {
		ops := make([]string, 0, len(pa.Requests))
		for op := range pa.Requests {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		var parts []string
		for _, op := range ops {
			parts = append(parts, fmt.Sprintf("%s %s", op, num(pa.Requests[op])))
		}
		fmt.Fprintf(w, "\n- **%s** (%s; %d events): %s", pa.Name, pa.What, pa.Events, strings.Join(parts, ", "))
		var wru []string
		for _, op := range ops {
			if v := pa.WRUByOperation[op]; v > 0 {
				wru = append(wru, fmt.Sprintf("%s %s", op, num(v)))
			}
		}
		if len(wru) > 0 {
			fmt.Fprintf(w, ". WRU: %s", strings.Join(wru, ", "))
		}
		fmt.Fprintln(w)
	}
}

// peerNote says what the peer architecture lacks, guarantee by guarantee
// (see Peer).
const peerNote = `
The peer rows price the architecture a platform team would build instead (` + "`costmodel.Peer`" + `): API Gateway →
a Lambda that verifies and calls EventBridge ` + "`PutEvents`" + ` → a rule per subscriber targeting its SQS queue (with a
DLQ) → the consumer Lambda with a Powertools-style idempotency table (conditional put of ` + "`INPROGRESS`" + `, update
to ` + "`COMPLETED`" + `, records under 1 KB); no ledger, no outbox. Its compute and log bytes are taken from this
platform's measured path for the same events (an upper bound: its front function does less than webhook and
ingest together), so the difference is in the billed requests. What it does not give, per guarantee:

| guarantee | here | peer |
|---|---|---|
| dedupe at ingest | one ledger item per event id, a repeat is acknowledged and sends nothing | every repeat (Stripe's redeliveries, concurrent retries) is put and fanned out again; each consumer deduplicates only while its idempotency record lives (an hour by default) |
| transactional fan-out | the ledger item and every topic's outbox row in one transaction | ` + "`PutEvents`" + ` can fail some entries; nothing records that an event was accepted, so only the caller's retry recovers it |
| sweeper | stranded dispatches found and resent, lost consumer outcomes settled | none: a put the caller did not retry is gone; EventBridge retries a failing target for 24 h, then its DLQ |
| incidents | every dead letter an incident with its payload, triage states, alerts | dead letters wait in an SQS DLQ for at most 14 days; no store, no archive, no triage |
| replay | one incident or a filtered set, to its topic, attested when it succeeds | EventBridge archive and replay re-sends a time range to every rule (archive storage and replayed events extra); no per-incident replay, no attestation |
`

// renderCompute writes how each path's Lambda compute was modelled.
func renderCompute(w io.Writer, r Report) {
	fmt.Fprintln(w, "\n### Lambda compute, per function and invocation")
	fmt.Fprintln(w, "\nBilled duration = waiting on the AWS calls on the invocation's critical path (`costmodel.InRegion` latencies; a Lambda Invoke waits for its callee's billed duration) + the function's CPU time on one core, stretched to its memory's share of a vCPU, rounded up to the millisecond. CPU is priced as committed with the figures (`pricedCPU` in the test) and measured again by every run (a CPU profile labelled per invocation); the emulator column is the measured wall clock on this machine. Both measured columns are for comparison only: they move with the machine's load, the billed figures do not.")
	fmt.Fprintln(w, "\n| path | function (MB) | invocations | calls | wait ms | CPU ms, priced (measured) | CPU stretched ms | billed ms | emulator ms | GB-s per event |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, pa := range r.Paths {
		for _, c := range pa.Compute {
			n := float64(max(c.Invocations, 1))
			fmt.Fprintf(w, "| %s | %s (%d) | %d | %s | %.1f | %.2f (%.2f) | %.2f | %.1f | %.1f | %.5f |\n", pa.Name, c.Role, c.MemoryMB, c.Invocations,
				num(float64(c.Calls)/n), c.WaitMs/n, c.PricedCPUMs, c.MeasuredCPUMs, c.CPUMs/n, c.BilledMs/n, c.WallMs/n, c.GBSeconds/float64(max(pa.Events, 1)))
		}
	}
}

// renderLines prices the reference mixes and their peers line by line,
// side by side: every billed item.
func renderLines(w io.Writer, r Report, p Prices) {
	type col struct {
		name string
		u    Units
	}
	var cols []col
	for _, m := range r.Mixes {
		if !strings.Contains(m.Name, "reference") {
			continue
		}
		cols = append(cols, col{m.Name, r.MixUnits(m)})
		for _, pe := range r.Peers {
			if pe.Name == m.Name {
				cols = append(cols, col{"peer: " + pe.Name, pe.Units()})
			}
		}
	}
	if len(cols) == 0 {
		return
	}
	fmt.Fprintln(w, "\n### Every billed item, per million events, beside the peer")
	fmt.Fprintln(w)
	head, rule := "| item |", "|---|"
	for _, c := range cols {
		head += " " + c.name + " |"
		rule += "---:|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	var items []string
	for _, l := range p.Dollars(Units{}) {
		items = append(items, l.Item)
	}
	sort.Strings(items)
	for _, item := range items {
		line := "| " + item + " |"
		for _, c := range cols {
			for _, l := range p.Dollars(c.u) {
				if l.Item == item {
					line += " " + usd(l.Dollars*1e6) + " |"
				}
			}
		}
		fmt.Fprintln(w, line)
	}
	total := "| **total** |"
	for _, c := range cols {
		total += " **" + usd(p.Total(c.u)*1e6) + "** |"
	}
	fmt.Fprintln(w, total)
}

// RenderAck writes the latency model's section of docs/cost.md: each hop
// with its source, and the answer of every path that has one.
func RenderAck(w io.Writer, r Report, m LatencyModel) {
	fmt.Fprintln(w, "\n## The Stripe ack, by the latency model")
	fmt.Fprintln(w, "\nWhat Stripe waits for: API Gateway, the webhook function, its synchronous invoke of ingest and ingest's calls up to its answer, each call as the run recorded it (`costmodel.LatencyModel`, `InRegionLatency`: each hop log-normal with the median and 99th percentile below, independent; every function's CPU as priced above, stretched to its memory's CPU share; 20,000 draws per event, fixed seed). Work after an answer (ingest's record of its send) is billed but not waited for.")
	fmt.Fprintln(w, "\n| hop | p50 ms | p99 ms | source |")
	fmt.Fprintln(w, "|---|---:|---:|---|")
	row := func(name string, h Hop) {
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %s |\n", name, float64(h.P50)/float64(time.Millisecond), float64(h.P99)/float64(time.Millisecond), h.Source)
	}
	row("API Gateway (HTTP API)", m.Gateway)
	row("Lambda Invoke (synchronous, warm)", m.Invoke)
	for _, op := range slices.Sorted(maps.Keys(m.Call)) {
		row(op, m.Call[op])
	}
	for _, svc := range slices.Sorted(maps.Keys(m.Service)) {
		row(svc+" (other operations)", m.Service[svc])
	}
	row("anything else", m.Default)
	fmt.Fprintln(w, "\n| path | requests | ack p50 ms | ack p99 ms | on the critical path, per request |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|")
	for _, pa := range r.Paths {
		if pa.Ack == nil || pa.Ack.Requests == 0 {
			continue
		}
		var hops []string
		for _, op := range slices.Sorted(maps.Keys(pa.Ack.Path)) {
			hops = append(hops, fmt.Sprintf("%s %s", op, num(pa.Ack.Path[op])))
		}
		fmt.Fprintf(w, "| %s | %d | %.1f | %.1f | %s |\n", pa.Name, pa.Ack.Requests, float64(pa.Ack.P50)/float64(time.Millisecond), float64(pa.Ack.P99)/float64(time.Millisecond), strings.Join(hops, ", "))
	}
}
