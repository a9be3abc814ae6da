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
			// Versions may skip numbers: two behind is the third newest.
			versions, err := sqlstore.EmbeddedVersions(db.Dialect())
			if err != nil || len(versions) < 3 {
				t.Fatalf("versions: %v, %v", versions, err)
			}
			if latest, _ := sqlstore.LatestSchemaVersion(db.Dialect()); latest != versions[len(versions)-1] {
				t.Fatalf("latest %d of %v", latest, versions)
			}
			if err := sqlstore.MigrateTo(ctx, db, versions[len(versions)-3]); err != nil {
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
