// Package storetest is the one contract every ports.Store implementation is
// held to. The memory fake and the SQL store (SQLite and PostgreSQL) run the
// same cases, so a fake that passes here behaves like the real thing.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Opener makes an empty store for one test.
type Opener func(t *testing.T) ports.Store

// Run runs every contract case against stores made by open.
func Run(t *testing.T, open Opener) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, &fixture{t: t, s: open(t), ctx: context.Background(), now: t0})
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, f *fixture)
}

var cases []testCase

// register adds cases; each file of the suite registers its own.
func register(cs ...testCase) { cases = append(cases, cs...) }

// t0 is the suite's epoch, with microseconds to catch lost precision.
var t0 = time.Date(2026, 11, 21, 8, 0, 0, 123456000, time.UTC)

// fixture builds rows for a test with little ceremony.
type fixture struct {
	t   *testing.T
	s   ports.Store
	ctx context.Context
	now time.Time
}

// tick moves the fixture's clock one second and returns it.
func (f *fixture) tick() time.Time {
	f.now = f.now.Add(time.Second)
	return f.now
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) account() core.Account {
	f.t.Helper()
	a := core.Account{ID: uuid.NewString(), Email: uuid.NewString()[:8] + "@example.com", SubscriptionActive: true, CreatedAt: f.tick()}
	f.must(f.s.CreateAccount(f.ctx, a))
	return a
}

// identity creates an identity with its first inbox.
func (f *fixture) identity(accountID string) (core.Identity, core.Inbox) {
	f.t.Helper()
	now := f.tick()
	id := core.Identity{ID: uuid.NewString(), AccountID: accountID, Name: "agent-" + uuid.NewString()[:8], CreatedAt: now, UpdatedAt: now}
	in := core.Inbox{UUID: uuid.NewString(), AccountID: accountID, IdentityID: id.ID, Email: id.Name + "@agents.test", CreatedAt: now}
	var err error
	in.ID, err = f.s.CreateIdentity(f.ctx, id, in, nil)
	f.must(err)
	id.Inbox = in.Email
	return id, in
}

// wantKind fails unless err is a core error of kind k.
func wantKind(t *testing.T, err error, k core.Kind) {
	t.Helper()
	if got := core.KindOf(err); got != k || err == nil {
		t.Fatalf("want error kind %d, got %v (kind %d)", k, err, got)
	}
}

// wantConflictOn fails unless err is a Conflict naming field.
func wantConflictOn(t *testing.T, err error, field string) {
	t.Helper()
	wantKind(t, err, core.KindConflict)
	if e := err.(*core.Error); len(e.Fields[field]) == 0 {
		t.Fatalf("conflict should name %q: %+v", field, e.Fields)
	}
}
