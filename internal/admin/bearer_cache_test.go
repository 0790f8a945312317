package admin_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

// adminReads is the GetItems made on the admin table so far (/admin/queues
// reads no other table).
func (b *bundle) adminReads() int { return b.env.Calls.Count("DynamoDB", "GetItem") }

// A burst of bearer-key requests from one address reads the address's
// sign-in record once per admin.BearerCacheTTL, not once per request
// (every console page and every `evp` call was one more strongly
// consistent GetItem); past the TTL it is read again.
func TestBearerKeyReadsTheAddressRecordOncePerTTL(t *testing.T) {
	t.Parallel()
	clk := newClock()
	b := setupClocked(t, clk, nil)
	const operator, n = "198.51.100.7", 20

	before := b.adminReads()
	for i := range n {
		status, _ := b.adminFrom(t, operator, "/admin/queues", "Bearer "+key)
		require.Equal(t, http.StatusOK, status, "request %d", i+1)
		clk.Add(time.Second)
	}
	require.Equal(t, 1, b.adminReads()-before, "%d requests within the TTL: one read of the address's record", n)

	clk.Add(admin.BearerCacheTTL)
	status, _ := b.adminFrom(t, operator, "/admin/queues", "Bearer "+key)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 2, b.adminReads()-before, "past the TTL the record is read again")

	other := b.adminReads()
	status, _ = b.adminFrom(t, "203.0.113.50", "/admin/queues", "Bearer "+key)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 1, b.adminReads()-other, "another address has its own record")
}

// What an instance remembers never lets a right key skip a lock for long:
// wrong keys counted through this instance drop it at once, a lock earned
// through another instance holds here within the TTL, and a wrong key is
// refused and counted every time (wrong keys are never remembered: each
// must count towards the back-off).
func TestBearerKeyCacheYieldsToTheLock(t *testing.T) {
	t.Parallel()
	clk := newClock()
	b := setupClocked(t, clk, nil)
	elsewhere := wiretest.Admin(t, b.env, key, wiretest.Opts{Now: clk.Now}) // another warm instance
	const shared = "192.0.2.44"                                             // an operator and a guesser behind one NAT

	status, _ := b.adminFrom(t, shared, "/admin/queues", "Bearer "+key)
	require.Equal(t, http.StatusOK, status)
	other := &bundle{env: b.env, api: elsewhere}
	for i := range admin.DefaultSignInFree {
		status, _ = other.adminFrom(t, shared, "/admin/queues", "Bearer wrong-key-0000009")
		require.Equal(t, http.StatusUnauthorized, status, "wrong key %d elsewhere", i+1)
	}
	status, _ = other.adminFrom(t, shared, "/admin/queues", "Bearer wrong-key-0000009")
	require.Equal(t, http.StatusTooManyRequests, status, "the address is locked (through the other instance)")

	status, _ = b.adminFrom(t, shared, "/admin/queues", "Bearer "+key)
	require.Equal(t, http.StatusOK, status, "within the TTL this instance still takes the key it checked")
	clk.Add(admin.BearerCacheTTL - time.Second) // the lock (2 s) has passed: lock again from elsewhere
	status, _ = other.adminFrom(t, shared, "/admin/queues", "Bearer wrong-key-0000009")
	require.Equal(t, http.StatusUnauthorized, status)
	clk.Add(time.Second)
	status, h := b.adminFrom(t, shared, "/admin/queues", "Bearer "+key)
	require.Equal(t, http.StatusTooManyRequests, status, "past the TTL the lock holds here too")
	require.NotEmpty(t, h["Retry-After"])

	// Through this instance a wrong key drops what it remembered at once.
	clk.Add(time.Hour)
	status, _ = b.adminFrom(t, shared, "/admin/queues", "Bearer "+key)
	require.Equal(t, http.StatusOK, status, "after the wait the right key starts the address over")
	for i := range admin.DefaultSignInFree {
		status, _ = b.adminFrom(t, shared, "/admin/queues", "Bearer wrong-key-0000009")
		require.Equal(t, http.StatusUnauthorized, status, "wrong key %d: refused and counted, never remembered", i+1)
	}
	status, _ = b.adminFrom(t, shared, "/admin/queues", "Bearer wrong-key-0000009")
	require.Equal(t, http.StatusTooManyRequests, status)
	status, _ = b.adminFrom(t, shared, "/admin/queues", "Bearer "+key)
	require.Equal(t, http.StatusTooManyRequests, status, "the key remembered a moment ago is refused while the address waits")
}

// switchableKeys are an admin.Keys whose active set a test changes, as a
// rotation of the secret does (the Keyring itself is secret's tests').
type switchableKeys struct {
	mu   sync.Mutex
	keys []string
}

func (k *switchableKeys) set(keys ...string) { k.mu.Lock(); defer k.mu.Unlock(); k.keys = keys }

func (k *switchableKeys) Active(context.Context) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys
}

func (k *switchableKeys) Reload(ctx context.Context) ([]string, bool) { return k.Active(ctx), false }

// A key rotated out of the secret is refused from the next request on,
// however fresh its remembered check: the cache spares the sign-in
// record's read, never the comparison with the active keys. (A revoked
// key stops working when the keyring sees the rotation, as before.)
func TestBearerKeyRevokedIsRefusedDespiteTheCache(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	clk := newClock()
	gate := &admin.Gate{Limit: admin.SignInLimit{}.WithDefaults(), Store: &dynamo.Admin{Client: env.DynamoDB, Table: env.Resources.AdminTable}, Now: clk.Now}
	keys := &switchableKeys{}
	keys.set(key, "test-admin-key-2")
	ctx := context.Background()
	const operator = "198.51.100.7"

	require.NoError(t, gate.Bearer(ctx, operator, keys, "Bearer "+key))
	require.NoError(t, gate.Bearer(ctx, operator, keys, "Bearer test-admin-key-2"))
	reads := env.Calls.Count("DynamoDB", "GetItem")
	require.NoError(t, gate.Bearer(ctx, operator, keys, "Bearer "+key), "remembered")
	require.Equal(t, reads, env.Calls.Count("DynamoDB", "GetItem"), "no read for a remembered key")

	keys.set("test-admin-key-2")
	clk.Add(time.Second)
	require.ErrorIs(t, gate.Bearer(ctx, operator, keys, "Bearer "+key), admin.ErrWrongKey, "rotated out: refused within the TTL")
	require.NoError(t, gate.Bearer(ctx, operator, keys, "Bearer test-admin-key-2"), "the key that stays works")
}
