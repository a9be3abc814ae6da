package sqlstore_test

import (
	"context"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/core"
)

// Every text argument is cleaned on its way to the database: NUL and
// invalid UTF-8 are stored as U+FFFD on both dialects (PostgreSQL refused
// them: SQLSTATE 22021), in writes and in lookups alike.
func TestTextIsCleanedOnTheWayIn(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			db := sqlstoretest.Open(t, d)
			ctx := context.Background()
			a := core.Account{ID: "0b6f4c64-8a4e-4a35-9a4f-3c1f0d7b2a11", Email: "nul@example.com", SubscriptionActive: true}
			if err := db.CreateAccount(ctx, a); err != nil {
				t.Fatal(err)
			}
			ident := core.Identity{ID: "5d1b2f7e-3c4a-4e8b-9f1d-2a6c7e8b9d01", AccountID: a.ID, Name: "bad\x00name\xff"}
			in := core.Inbox{UUID: "8e2d4c6a-1b3f-4a5e-8c7d-9f0a1b2c3d4e", AccountID: a.ID, IdentityID: ident.ID, Email: "bad@agents.test"}
			if _, err := db.CreateIdentity(ctx, ident, in, nil); err != nil {
				t.Fatalf("an identity named with NUL and invalid UTF-8: %v", err)
			}
			got, err := db.Identity(ctx, a.ID, ident.ID)
			if err != nil || got.Name != "bad\uFFFDname\uFFFD" {
				t.Fatalf("read back %q, %v", got.Name, err)
			}
			_, err = db.InboxByEmail(ctx, "nobody\x00@agents.test")
			if core.KindOf(err) != core.KindNotFound {
				t.Fatalf("a lookup with NUL: %v", err)
			}
		})
	}
}

// What PostgreSQL still refuses as invalid data is the caller's input
// (KindInvalid: 400, 554), never a retryable or internal failure.
func TestDataExceptionsAreInvalidInput(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		if d != sqlstore.Postgres {
			continue
		}
		db := sqlstoretest.Open(t, d)
		err := sqlstore.ProbeCast(context.Background(), db, "not a number")
		if core.KindOf(err) != core.KindInvalid {
			t.Fatalf("a data exception: %v (%T)", err, err)
		}
	}
}
