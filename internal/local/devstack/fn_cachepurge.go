package devstack

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/siteswarm/eventplatform/internal/aws/ssmparam"
	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/purgeapifn"
	"github.com/siteswarm/eventplatform/internal/wire/purgeconsumerfn"
)

func init() {
	register("purge", purgeFunctions)
	// One purge API, whatever the number of purge topics; none without
	// one.
	locals[purgeapifn.Name] = local{runs: func(s *Stack) bool { return hasTopicOf(s.Topology, topology.ConsumerPurge) }}
}

// PurgesPath is local mode's inspection endpoint: GET lists the recorded
// purge calls, DELETE clears them, POST PurgesPath+"/fail?status=&retryAfter="
// makes the local purge API fail (DELETE …/fail recovers). With a
// Cloudflare token configured there is no local mode and every one answers
// 404.
const PurgesPath = "/__purges"

// LocalZone is every tenant's zone in local mode unless PURGE_ZONES says
// otherwise.
const LocalZone = "local-zone"

// PurgeResources are the purge functions' settings the local stack decides;
// local mode (no CLOUDFLARE_API_TOKEN[_SECRET_ARN] in the settings) maps
// every tenant to LocalZone unless PURGE_ZONES is set.
func (s *Stack) PurgeResources(tp topology.Topic) map[string]string {
	q := s.Resources.Queues[tp.Name]
	res := map[string]string{
		wire.EnvPurgeTable:     s.Resources.PurgeTable,
		wire.EnvIngestFunction: ingestfn.Name,
		consumerfn.EnvTopic:    tp.Name,
		consumerfn.EnvQueueURL: q.URL,
		consumerfn.EnvDLQURL:   q.DLQURL,
		wire.EnvEventsTable:    s.Resources.EventsTable,
		wire.EnvIncidentsTable: s.Resources.IncidentsTable,
		// breaker transitions are applied at once
		consumerfn.EnvHealthFunction: FunctionHealth,
	}
	if s.Settings.String(purgeconsumerfn.EnvZones, "") == "" {
		res[purgeconsumerfn.EnvZones] = fmt.Sprintf(`{"default":%q}`, LocalZone)
	}
	return res
}

func purgeFunctions(ctx context.Context, s *Stack) ([]Function, error) {
	var fns []Function
	for _, tp := range s.Topology.Topics {
		if tp.Consumer != topology.ConsumerPurge {
			continue
		}
		env := s.env(s.PurgeResources(tp))
		name := consumerfn.FunctionName(tp)
		cl := purgeconsumerfn.Clients{Clients: s.consumerClients(), SSM: s.Clients.SSM}
		// Per-tenant zones are kept in the local SSM, as deployed.
		keepZones := func(cfg purgeconsumerfn.Config) (purgeconsumerfn.Config, error) {
			path, err := s.configMap(ctx, ssmparam.PurgeZones, cfg.Purge.Zones.ByTenant)
			if err != nil || path == "" {
				return cfg, err
			}
			cfg.ZonesPath, cfg.Purge.Zones.ByTenant = path, nil
			return cfg, nil
		}
		c, err := func() (fn Function, err error) {
			if purgeconsumerfn.HasToken(env) {
				cfg, err := purgeconsumerfn.Load(env, s.Topology)
				if err == nil {
					cfg, err = keepZones(cfg)
				}
				if err != nil {
					return fn, err
				}
				cons, err := purgeconsumerfn.New(coldStart(ctx, name), cfg, cl, s.runtime(name))
				if err != nil {
					return fn, err
				}
				return Function{Name: name, Handler: cons.Handle, Timeout: tp.ConsumerTimeout}, nil
			}
			cfg, err := purgeconsumerfn.LoadLocal(env, s.Topology)
			if err == nil {
				cfg, err = keepZones(cfg)
			}
			if err == nil {
				cfg, err = purgeconsumerfn.ResolveZones(coldStart(ctx, name), cfg, cl.SSM)
			}
			if err != nil {
				return fn, err
			}
			if s.Purges == nil {
				s.Purges = &cachepurge.LocalAPI{}
			}
			cons, err := purgeconsumerfn.NewWithAPI(cfg, cl, s.runtime(name), s.Purges)
			if err != nil {
				return fn, err
			}
			return Function{Name: name, Handler: cons.Handle, Timeout: tp.ConsumerTimeout}, nil
		}()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if c.Triggers, err = s.queueSources(consumerfn.QueueSource(tp)); err != nil {
			return nil, err
		}
		fns = append(fns, c)
	}
	if err := s.purgeRoutes(); err != nil {
		return nil, err
	}
	return fns, nil
}

// purgeRoutes mounts local mode's inspection endpoint (404 without local
// mode: no inspection surface next to a real CDN).
func (s *Stack) purgeRoutes() error {
	local := func(next func(w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if s.Purges == nil {
				writeJSON(w, http.StatusNotFound, map[string]string{"error": "no local purge mode: a Cloudflare API token is configured"})
				return
			}
			next(w, r)
		}
	}
	routes := map[string]http.HandlerFunc{
		"GET " + PurgesPath: local(func(w http.ResponseWriter, _ *http.Request) {
			purges := s.Purges.Purges()
			if purges == nil {
				purges = []cachepurge.Recorded{}
			}
			writeJSON(w, http.StatusOK, map[string]any{"purges": purges, "failing": s.Purges.Failing()})
		}),
		"DELETE " + PurgesPath: local(func(w http.ResponseWriter, _ *http.Request) {
			s.Purges.Clear()
			w.WriteHeader(http.StatusNoContent)
		}),
		"POST " + PurgesPath + "/fail": local(func(w http.ResponseWriter, r *http.Request) {
			f := cachepurge.LocalFailure{Status: http.StatusServiceUnavailable}
			q := r.URL.Query()
			var err error
			if v := q.Get("status"); v != "" {
				if f.Status, err = strconv.Atoi(v); err != nil || f.Status < 400 || f.Status > 599 {
					writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("status %q: want an HTTP error status (400-599)", v)})
					return
				}
			}
			if v := q.Get("retryAfter"); v != "" {
				if f.RetryAfter, err = strconv.Atoi(v); err != nil || f.RetryAfter < 0 {
					writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("retryAfter %q: want seconds", v)})
					return
				}
			}
			if v := q.Get("rate"); v != "" {
				if f.Rate, err = strconv.ParseFloat(v, 64); err != nil || f.Rate <= 0 || f.Rate > 1 {
					writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("rate %q: want the fraction of calls to fail, 0 < rate ≤ 1", v)})
					return
				}
			}
			s.Purges.Fail(&f)
			writeJSON(w, http.StatusOK, f)
		}),
		"DELETE " + PurgesPath + "/fail": local(func(w http.ResponseWriter, _ *http.Request) {
			s.Purges.Fail(nil)
			w.WriteHeader(http.StatusNoContent)
		}),
	}
	for pattern, h := range routes {
		if err := s.handle(pattern, h); err != nil {
			return err
		}
	}
	return nil
}
