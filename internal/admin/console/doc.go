// Package console is the operations console: server-rendered HTML pages
// under /console, served by the admin function beside the JSON API (which
// routes every /console… request to it) and behind the same bearer keys.
// It owns the pages — one file each: the overview (per-topic deliveries,
// the incidents chart, drawn as SVG on the server: chart.go), incidents
// (list, detail with the delivery attempts' timeline, actions, bulk
// replay), events, cache purges and jobs (progress, results, export
// downloads through presigned URLs) — their
// templates (the *.html and console.css embedded from this directory),
// the sign-in and the cookie session with its CSRF token. It reads and
// changes nothing itself: every page asks the admin API's ports (package
// admin), so the console, the JSON API and `evp` show the same thing.
package console
