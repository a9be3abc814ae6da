package sqlstore_test

import (
	"context"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
)

// Readiness counts the migrations a database lacks, on both dialects.
func TestPendingMigrations(t *testing.T) {
	ctx := context.Background()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			db, err := sqlstore.Open(ctx, sqlstoretest.URL(t, d), sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			latest, err := sqlstore.LatestSchemaVersion(db.Dialect())
			if err != nil || latest < 2 {
				t.Fatalf("latest: %d, %v", latest, err)
			}
			if err := sqlstore.MigrateTo(ctx, db, latest-2); err != nil {
				t.Fatal(err)
			}
			if n, err := db.PendingMigrations(ctx); n != 2 || err != nil {
				t.Fatalf("two behind: %d pending, %v", n, err)
			}
			if err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if n, err := db.PendingMigrations(ctx); n != 0 || err != nil {
				t.Fatalf("current: %d pending, %v", n, err)
			}
		})
	}
}
