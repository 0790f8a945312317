// Package dynamo is the DynamoDB adapter. Events (the Events table): each
// event's item collection — the ledger item and its outbox rows — with the
// transactional commit, lease-conditional claims and outcome writes for
// senders and consumers, the sweeper index, and the tenant index. Incidents
// (the Incidents table): the incident store with optimistic versioning and
// replay attestation. Recovery: the transactions that span both tables (a
// dispatch abandoned together with its incident, every dead letter's
// incident), each guarded by the dispatch row's erasure marker (erased.go:
// how any write copying an event's data checks it). Key layout and index
// names come from package table.
//
// Adapter packages are named for the AWS service they speak: dynamo
// (DynamoDB), sqsqueue, s3blob, snsalert, lambdainvoke, smsecret. Domain
// packages declare the ports; only adapters import service clients.
package dynamo
