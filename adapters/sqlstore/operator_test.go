package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/core"
)

// TestOperatorQueries runs the operator's queries (first-run hint, metrics,
// doctor) on each database.
func TestOperatorQueries(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db := sqlstoretest.Open(t, d)
			if has, err := db.HasAccounts(ctx); err != nil || has {
				t.Fatalf("a new database has accounts: %v %v", has, err)
			}
			err := db.CreateAccount(ctx, core.Account{ID: "00000000-0000-4000-8000-0000000000a1", Email: "op@example.com",
				SubscriptionActive: true, CreatedAt: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if has, err := db.HasAccounts(ctx); err != nil || !has {
				t.Fatalf("after one: %v %v", has, err)
			}
			if n, err := db.OutboxDepth(ctx); err != nil || n != 0 {
				t.Fatalf("outbox depth: %d %v", n, err)
			}
			if pending, err := db.Pending(ctx); err != nil || pending {
				t.Fatalf("pending migrations after migrating: %v %v", pending, err)
			}
			pools := db.Pools()
			if len(pools) == 0 {
				t.Fatal("no pools")
			}
			for role, pool := range pools {
				if err := pool.PingContext(ctx); err != nil {
					t.Errorf("%s pool: %v", role, err)
				}
			}
		})
	}
}
