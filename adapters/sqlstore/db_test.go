package sqlstore_test

import (
	"context"
	"os"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
)

// The service's PostgreSQL sessions run without parallel plans and JIT
// (pgSessionDefaults), unless the database URL says otherwise.
func TestPostgresSessionsRunWithoutParallelPlansAndJITUnlessTheURLSays(t *testing.T) {
	if os.Getenv(sqlstoretest.PostgresURLVar) == "" {
		t.Skip(sqlstoretest.PostgresURLVar + " is not set")
	}
	ctx := context.Background()
	for _, c := range []struct{ extra, jit, workers string }{
		{"", "off", "0"},
		{"&jit=on&max_parallel_workers_per_gather=1", "on", "1"},
	} {
		db, err := sqlstore.Open(ctx, sqlstoretest.URL(t, sqlstore.Postgres)+c.extra, sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for name, want := range map[string]string{"jit": c.jit, "max_parallel_workers_per_gather": c.workers} {
			if got, err := sqlstore.Setting(ctx, db, name); err != nil || got != want {
				t.Errorf("URL with %q: %s = %q, %v; want %q", c.extra, name, got, err, want)
			}
		}
	}
}
