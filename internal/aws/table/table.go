package table

import (
	"fmt"
	"hash/fnv"
)

// AttrType is a DynamoDB key attribute type.
type AttrType string

const (
	String AttrType = "S"
	Number AttrType = "N"
)

// Key is a key attribute.
type Key struct {
	Name string
	Type AttrType
}

// Projection of a GSI.
type Projection string

const (
	ProjectAll      Projection = "ALL"
	ProjectKeysOnly Projection = "KEYS_ONLY"
	ProjectInclude  Projection = "INCLUDE"
)

// Index is a global secondary index.
type Index struct {
	Name       string
	PK         Key
	SK         *Key
	Projection Projection
	// NonKey lists the projected attributes when Projection is INCLUDE.
	NonKey []string
}

// Def is a table definition. Name is the logical name; the physical name is
// Name under a stage prefix (PhysicalName).
type Def struct {
	Name    string
	PK      Key
	SK      *Key
	Indexes []Index
	// TTLAttribute holds an epoch-seconds expiry, or is empty for tables
	// whose items never expire.
	TTLAttribute string
}

// PhysicalName is the table name under a resource prefix such as "evp-prod".
func (d Def) PhysicalName(prefix string) string {
	if prefix == "" {
		return d.Name
	}
	return prefix + "-" + d.Name
}

// Attribute names shared by the tables.
const (
	AttrPK        = "pk"
	AttrSK        = "sk"
	AttrExpiresAt = "expiresAt"

	// Events table: the due index partitions outbox rows by
	// "due#<shard>" and sorts them by nextRetryAt (epoch millis), when the
	// sweeper next looks at the row: the spec's
	// idx_dispatches_sweeper(status, next_retry_at), with the status read
	// from the row. A row carries duePk from its creation until its
	// outcome (IndexDue). AttrDuePK is shared with the jobs table.
	AttrNextRetryAt = "nextRetryAt"
	// AttrSweepPK is the legacy sweeper index's partition,
	// "<status>#<shard>" (IndexSweep): rows written before the due index.
	AttrSweepPK = "sweepPk"
	// Events table: the tenant-shard index holds ledger items only (outbox
	// rows carry neither attribute): partition tenantPk,
	// "<tenant>#<shard>" (TenantPartition), sorted by tenantAt,
	// "<createdAt>#<eventId>". Ledger items written before it carry
	// tenantSk (the same value) instead and are in the legacy tenant index,
	// partitioned by tenantId alone.
	AttrTenantID = "tenantId"
	AttrTenantPK = "tenantPk"
	AttrTenantAt = "tenantAt"
	AttrTenantSK = "tenantSk"

	// Incidents table: listed newest failure first (a re-failure of an old
	// incident moves it up), by status or by tenant.
	AttrIncidentID   = "incidentId"
	AttrStatus       = "status"
	AttrLastFailedAt = "lastFailedAt"

	// Events and incidents tables: the subject identifiers an event names
	// (subject.Names): the envelope subject, and the entity a provider's
	// payload says the event belongs to (a Stripe customer; on a ledger
	// item that is its ordering key, on an incident its owner). Indexed
	// under the item's tenant (the index sort key), so an erasure reads
	// exactly the tenant's items naming the identifier, never the tenant's
	// other items; ledger items stored before the indexes are in them
	// (they carry both attributes), no attribute is added to them.
	AttrSubject     = "subject"
	AttrOrderingKey = "orderingKey"
	AttrOwner       = "owner"
)

// Index names.
const (
	// IndexDue is the sweeper's index since issue 25 (lever 2): KEYS_ONLY,
	// so a row's transitions that keep its keys (enqueued, processing, a
	// consumer's retry) write nothing to it, and a row enters it once (its
	// creation) and leaves it once (its outcome).
	IndexDue = "due"
	// IndexSweep is the earlier sweeper index (status partitions, ALL
	// projection). New rows never enter it; the sweeper still reads it for
	// rows written before the due index, which leave it on their next
	// transition. Drop it once a stage has run the due index for the
	// events' retention (docs/operations.md).
	IndexSweep = "sweep"
	// IndexTenantShard lists a tenant's events (issue 37): its partition
	// is the tenant and a shard of the event's key, so one tenant's
	// writes spread over TenantShards index partitions instead of one
	// (about 1,000 writes a second each); a listing queries every shard
	// and merges them by time.
	IndexTenantShard = "tenant-shard"
	// IndexTenant is the earlier tenant index (partition tenantId alone).
	// New ledger items never enter it (they carry no tenantSk); listings
	// still read it for items written before the tenant-shard index,
	// which expire with the ledger retention. Drop it once a stage has
	// run the tenant-shard index for the events' retention
	// (docs/operations.md).
	IndexTenant         = "tenant"
	IndexIncidentStatus = "status-lastFailedAt"
	IndexIncidentTenant = "tenant-lastFailedAt"
	// IndexSubject and IndexOwner are the subject identifier indexes of
	// the events and incidents tables (keys only).
	IndexSubject = "subject"
	IndexOwner   = "owner"
)

// SubjectIndexes are the subject identifier indexes of a table whose
// items name their owner in owner (keys only, under the tenant).
func SubjectIndexes(owner string) []Index {
	return []Index{
		{Name: IndexSubject, PK: Key{AttrSubject, String}, SK: &Key{AttrTenantID, String}, Projection: ProjectKeysOnly},
		{Name: IndexOwner, PK: Key{owner, String}, SK: &Key{AttrTenantID, String}, Projection: ProjectKeysOnly},
	}
}

// SweepShards is how many partitions each outbox status is spread over in
// the sweeper index, so a backlog of stranded rows never lands on one hot
// partition. The sweeper queries every shard.
const SweepShards = 8

// SweepPartition is the legacy sweeper index partition value of an outbox
// row (IndexSweep).
func SweepPartition(status, eventID, topic string) string {
	return fmt.Sprintf("%s#%d", status, Shard(eventID, topic))
}

// TenantShards is how many index partitions one tenant's events spread
// over in the tenant-shard index: the ceiling of one tenant's event rate
// from that index is TenantShards times a partition's ~1,000 writes a
// second, and a listing costs TenantShards queries a page.
const TenantShards = 8

// TenantPartition is the tenant-shard index partition of an event of
// tenant under storage key (ledger.Key): "<tenant>#<shard>", the shard a
// stable hash of the key (tenant ids hold no "#").
func TenantPartition(tenant, key string) string {
	return TenantShardPartition(tenant, TenantShard(key))
}

// TenantShardPartition is the partition of one of a tenant's shards.
func TenantShardPartition(tenant string, shard int) string {
	return fmt.Sprintf("%s#%d", tenant, shard)
}

// TenantShard is the stable tenant-shard of an event's storage key.
func TenantShard(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % TenantShards)
}

// DuePartition is the due index partition value of an outbox row.
func DuePartition(eventID, topic string) string { return DuePartitionOf(Shard(eventID, topic)) }

// DuePartitionOf is the due index partition of a shard.
func DuePartitionOf(shard int) string { return fmt.Sprintf("due#%d", shard) }

// Shard is the stable sweeper shard of an (event, topic) dispatch.
func Shard(eventID, topic string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(eventID))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(topic))
	return int(h.Sum32() % SweepShards)
}

// Events holds one item collection per event: the ledger item
// (sk "LEDGER") and one outbox row per routed topic (sk "DISPATCH#<topic>").
var Events = Def{
	Name: "events",
	PK:   Key{AttrPK, String},
	SK:   &Key{AttrSK, String},
	Indexes: []Index{
		{
			Name:       IndexDue,
			PK:         Key{AttrDuePK, String},
			SK:         &Key{AttrNextRetryAt, Number},
			Projection: ProjectKeysOnly,
		},
		{
			Name:       IndexSweep,
			PK:         Key{AttrSweepPK, String},
			SK:         &Key{AttrNextRetryAt, Number},
			Projection: ProjectAll,
		},
		{
			Name:       IndexTenant,
			PK:         Key{AttrTenantID, String},
			SK:         &Key{AttrTenantSK, String},
			Projection: ProjectInclude,
			NonKey:     []string{"eventId", "type", "source", "topics", "status", "createdAt", "timestamp", "subject"},
		},
		SubjectIndexes(AttrOrderingKey)[0],
		SubjectIndexes(AttrOrderingKey)[1],
		{
			Name:       IndexTenantShard,
			PK:         Key{AttrTenantPK, String},
			SK:         &Key{AttrTenantAt, String},
			Projection: ProjectInclude,
			// What a listing shows and filters on (type, subject, and the
			// Stripe customer, orderingKey), so neither needs the item.
			NonKey: []string{AttrTenantID, "eventId", "type", "source", "topics", "status", "createdAt", "timestamp", AttrSubject, AttrOrderingKey},
		},
	},
	TTLAttribute: AttrExpiresAt,
}

// EventsIndexesBefore are the events table's indexes before the
// tenant-shard index: a stage deployed with them gains it in one update
// (CloudFormation adds one index per update).
var EventsIndexesBefore = Events.Indexes[:len(Events.Indexes)-1]

// Incidents holds one item per (event, topic) dead letter. Never expires.
var Incidents = Def{
	Name: "incidents",
	PK:   Key{AttrIncidentID, String},
	Indexes: []Index{
		{
			Name:       IndexIncidentStatus,
			PK:         Key{AttrStatus, String},
			SK:         &Key{AttrLastFailedAt, String},
			Projection: ProjectAll,
		},
		{
			Name:       IndexIncidentTenant,
			PK:         Key{AttrTenantID, String},
			SK:         &Key{AttrLastFailedAt, String},
			Projection: ProjectAll,
		},
		SubjectIndexes(AttrOwner)[0],
		SubjectIndexes(AttrOwner)[1],
	},
}

// IncidentIndexesBefore are the incident indexes of stages created before
// incidents were listed by their last failure (keyed on createdAt). The CDK
// app keeps them during the upgrade steps (CloudFormation changes one index
// per update); nothing else reads them.
var IncidentIndexesBefore = []Index{
	{Name: "status-createdAt", PK: Key{AttrStatus, String}, SK: &Key{"createdAt", String}, Projection: ProjectAll},
	{Name: "tenant-createdAt", PK: Key{AttrTenantID, String}, SK: &Key{"createdAt", String}, Projection: ProjectAll},
}

// Purge holds the cache purge service's jobs, coalesce locks, daily stats and
// DLQ mirror (docs/architecture.md §6), all under pk/sk with a TTL.
var Purge = Def{
	Name:         "purge",
	PK:           Key{AttrPK, String},
	SK:           &Key{AttrSK, String},
	TTLAttribute: AttrExpiresAt,
}

// Jobs attributes and indexes. A job item (pk JOB#<id>, sk JOB) carries the
// due index attributes only while the job is not finished (a sparse index:
// a terminal job is rewritten without them); its idempotency key is an item
// of its own (pk KEY#<tenant>#<kind>#<key>, sk KEY).
const (
	AttrDuePK       = "duePk"
	AttrDueAt       = "dueAt"
	AttrKind        = "kind"
	AttrCreatedAt   = "createdAt"
	IndexJobsDue    = "due"
	IndexJobsTenant = "tenant-createdAt"
	IndexJobsKind   = "kind-createdAt"
)

// JobsDueShards spreads due jobs over this many index partitions.
const JobsDueShards = 4

// JobsDueShard is the due index partition of a job id.
func JobsDueShard(jobID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(jobID))
	return int(h.Sum32() % JobsDueShards)
}

// Jobs holds durable jobs (internal/jobs): the job items, their
// idempotency keys, a sparse due index the sweep reads, and listings by
// tenant and by kind.
var Jobs = Def{
	Name: "jobs",
	PK:   Key{AttrPK, String},
	SK:   &Key{AttrSK, String},
	Indexes: []Index{
		{Name: IndexJobsDue, PK: Key{AttrDuePK, String}, SK: &Key{AttrDueAt, Number}, Projection: ProjectKeysOnly},
		{Name: IndexJobsTenant, PK: Key{AttrTenantID, String}, SK: &Key{AttrCreatedAt, String}, Projection: ProjectAll},
		{Name: IndexJobsKind, PK: Key{AttrKind, String}, SK: &Key{AttrCreatedAt, String}, Projection: ProjectAll},
	},
	TTLAttribute: AttrExpiresAt,
}

// Admin holds the admin function's own state: console sessions (revoked
// on sign-out, expiring with the session) and the per-source record of
// failed sign-ins behind the lock-out. Small items under pk/sk, all with a
// TTL; no role deletes them (a sign-out or a successful sign-in is an
// update).
var Admin = Def{
	Name:         "admin",
	PK:           Key{AttrPK, String},
	SK:           &Key{AttrSK, String},
	TTLAttribute: AttrExpiresAt,
}

// All is every table the platform provisions.
func All() []Def { return []Def{Events, Incidents, Purge, Jobs, Admin} }
