// Package dynamo is the DynamoDB adapter for the Events table: the ledger
// item and outbox rows of each event (one item collection per event), the
// transactional commit, conditional lease claims and the sweeper index. Key
// layout and index names come from package table.
package dynamo
