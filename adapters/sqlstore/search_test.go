package sqlstore_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// textsAndContactsSearch is the migration that indexes texts and contacts.
const textsAndContactsSearch = 22

// TestSearchMigrationIndexesExistingRows: texts and contacts stored before
// the index existed are found once the migration has run.
func TestSearchMigrationIndexesExistingRows(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db, err := sqlstore.Open(ctx, sqlstoretest.URL(t, d), sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if err := sqlstore.MigrateTo(ctx, db, textsAndContactsSearch-1); err != nil {
				t.Fatal(err)
			}
			scope, contacts := searchFixture(t, db, "Ann Smith", "Bob Jones")
			c := contacts[0]
			p := core.PhoneNumber{AccountID: c.AccountID, IdentityID: c.IdentityID, Number: "+14155550100", CountryCode: "US",
				Capabilities: core.Capabilities{SMS: true}, Provider: "sim", ProviderSID: "PN1", CreatedAt: c.CreatedAt}
			if p.ID, err = db.CreatePhone(ctx, p); err != nil {
				t.Fatal(err)
			}
			text := core.SMSMessage{AccountID: p.AccountID, IdentityID: p.IdentityID, PhoneID: p.ID, PhoneNumber: p.Number,
				FromNumber: "+14155550101", ToNumber: p.Number, Body: "Your code is 482913", Direction: core.Incoming,
				Status: core.SMSReceived, ProviderSID: "SM1", CreatedAt: c.CreatedAt}
			if _, _, err := db.SaveSMS(ctx, ports.NewSMS{Message: text}); err != nil {
				t.Fatal(err)
			}
			if err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if got := searchNames(t, db, scope, "jones", ports.Page{}); !reflect.DeepEqual(got, []string{"Bob Jones"}) {
				t.Errorf("contacts: %q", got)
			}
			q, _ := core.ParseSearch("code")
			texts, _, err := db.SMSList(ctx, ports.SMSFilter{Scope: scope, Search: &q})
			if err != nil || len(texts) != 1 || texts[0].Body != text.Body {
				t.Errorf("texts: %+v %v", texts, err)
			}
		})
	}
}

// searchFixture is an account and identity with contacts named in order
// of creation, oldest first.
func searchFixture(t *testing.T, db *sqlstore.DB, names ...string) (core.Scope, []core.Contact) {
	t.Helper()
	ctx, now := context.Background(), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	a := core.Account{ID: uuid.NewString(), Email: uuid.NewString()[:8] + "@example.com", SubscriptionActive: true, CreatedAt: now}
	ident := core.Identity{ID: uuid.NewString(), AccountID: a.ID, Name: "searcher", CreatedAt: now, UpdatedAt: now}
	in := core.Inbox{UUID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, Email: "searcher@agents.test", CreatedAt: now}
	if err := db.CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateIdentity(ctx, ident, in, nil); err != nil {
		t.Fatal(err)
	}
	var contacts []core.Contact
	for i, name := range names {
		at := now.Add(time.Duration(i+1) * time.Minute)
		c := core.Contact{ID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, DisplayName: name, Source: core.ContactManual,
			CreatedAt: at, UpdatedAt: at}
		if err := db.CreateContact(ctx, c); err != nil {
			t.Fatal(err)
		}
		contacts = append(contacts, c)
	}
	return core.Scope{AccountID: a.ID}, contacts
}

func searchNames(t *testing.T, db *sqlstore.DB, scope core.Scope, q string, page ports.Page) []string {
	t.Helper()
	query, err := core.ParseSearch(q)
	if err != nil {
		t.Fatal(err)
	}
	list, _, err := db.Contacts(context.Background(), ports.ContactFilter{Scope: scope, Search: &query, Page: page})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, c := range list {
		names = append(names, c.DisplayName)
	}
	return names
}

// TestSearchRanksTheNewestMatches: a search ranks only its newest
// rankWindow matches; the older ones follow newest first, also on a page
// that straddles the window.
func TestSearchRanksTheNewestMatches(t *testing.T) {
	defer sqlstore.SetRankWindow(3)()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			db := sqlstoretest.Open(t, d)
			scope, _ := searchFixture(t, db, "Ann Ann old", "Ann b", "Ann c", "Ann Ann d", "Ann e", "Ann f")
			want := []string{"Ann Ann d", "Ann f", "Ann e", "Ann c", "Ann b", "Ann Ann old"}
			if got := searchNames(t, db, scope, "ann", ports.Page{}); !reflect.DeepEqual(got, want) {
				t.Fatalf("all: %q, want %q", got, want)
			}
			for offset := 0; offset < len(want); offset += 2 {
				if got := searchNames(t, db, scope, "ann", ports.Page{Limit: 2, Offset: offset}); !reflect.DeepEqual(got, want[offset:offset+2]) {
					t.Errorf("offset %d: %q, want %q", offset, got, want[offset:offset+2])
				}
			}
			// Every page counts all the matches: a full one, the last
			// (shorter than its limit), one past the end; bounded or not.
			query, _ := core.ParseSearch("ann")
			for _, p := range []ports.Page{{Limit: 2, Offset: 2}, {Limit: 4, Offset: 4}, {Limit: 4, Offset: 8}, {Limit: 10}, {Limit: 2, CountUpTo: 4},
				{Limit: 2, CountUpTo: 3}, {Limit: 1, Offset: 2, CountUpTo: 3}} {
				p.Count = true
				wantTotal := len(want)
				if p.CountUpTo > 0 {
					wantTotal = p.CountUpTo
				}
				list, total, err := db.Contacts(context.Background(), ports.ContactFilter{Scope: scope, Search: &query, Page: p})
				if err != nil || total != wantTotal || len(list) != min(p.Limit, max(len(want)-p.Offset, 0)) {
					t.Errorf("%+v: %d contacts, total %d (want %d), %v", p, len(list), total, wantTotal, err)
				}
			}
		})
	}
}

// TestSearchesArePlannedForTheirWords: on PostgreSQL a statement that reads
// a text index is not kept prepared, where after five runs the server may
// plan it once for any words (search.go, planned); other reads are.
func TestSearchesArePlannedForTheirWords(t *testing.T) {
	if !slices.Contains(sqlstoretest.Dialects(), sqlstore.Postgres) {
		t.Skipf("%s is not set", sqlstoretest.PostgresURLVar)
	}
	ctx := context.Background()
	db := sqlstoretest.Open(t, sqlstore.Postgres)
	sqlstore.OneConnection(db)
	scope, _ := searchFixture(t, db, "Ann a", "Ann b", "Bo c")
	for range 8 {
		if got := searchNames(t, db, scope, "ann", ports.Page{Limit: 1, Count: true}); len(got) != 1 {
			t.Fatalf("ann: %q", got)
		}
		if _, _, err := db.Contacts(ctx, ports.ContactFilter{Scope: scope, Page: ports.Page{Limit: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	for part, want := range map[string]bool{"to_tsquery(": false, "FROM contacts": true} {
		n, err := sqlstore.PreparedStatements(ctx, db, part)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 != want {
			t.Errorf("%d prepared statements hold %q, want some: %v", n, part, want)
		}
	}
}

// TestContactSearchSurvivesVacuum: SQLite's contact index is keyed by the
// contacts' implicit rowids, which a VACUUM must keep for updates and
// deletes to reach the right index rows.
func TestContactSearchSurvivesVacuum(t *testing.T) {
	db := sqlstoretest.Open(t, sqlstore.SQLite)
	ctx := context.Background()
	scope, c := searchFixture(t, db, "Ann a", "Ann b", "Ann c", "Ann d", "Ann e")
	for _, gone := range []int{0, 2} { // rowids with gaps
		if err := db.DeleteContact(ctx, scope.AccountID, c[gone].ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := sqlstore.Vacuum(ctx, db); err != nil {
		t.Fatal(err)
	}
	c[3].DisplayName = "Zed d"
	if err := db.UpdateContact(ctx, c[3]); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteContact(ctx, scope.AccountID, c[4].ID); err != nil {
		t.Fatal(err)
	}
	if got := searchNames(t, db, scope, "zed", ports.Page{}); !reflect.DeepEqual(got, []string{"Zed d"}) {
		t.Errorf("zed: %q", got)
	}
	if got := searchNames(t, db, scope, "ann", ports.Page{}); !reflect.DeepEqual(got, []string{"Ann b"}) {
		t.Errorf("ann: %q", got)
	}
}
