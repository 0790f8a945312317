// Package ssmparam keeps stage settings that outgrow an environment variable
// in SSM Parameter Store: a string map (Stripe Connect account → tenant,
// tenant → Cloudflare zone) split into JSON objects of at most 4 KB, one
// standard parameter each, under one path. Lambda caps a function's whole
// environment at 4 KB, which a map in an environment variable reached at
// roughly 70–90 entries; split over parameters it scales to thousands, read
// at cold start with one GetParametersByPath page per ten parameters.
//
// Chunk is what the CDK app writes; LoadMap is what a function reads. A
// change of the map changes the functions' EnvVersion variable too, so a
// deploy replaces their execution environments and nothing serves a stale
// map.
package ssmparam
