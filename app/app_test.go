package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// world is the app over the memory fakes.
type world struct {
	t     *testing.T
	ctx   context.Context
	store *memory.Store
	clock *memory.Clock
	app   *app.App
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, ctx: context.Background(), store: memory.NewStore(), clock: memory.NewClock(time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC))}
	w.app = newApp(t, app.Deps{Ports: app.Ports{Store: w.store, Clock: w.clock, IDs: memory.IDs{}}, Settings: app.Settings{MailDomains: []string{"agents.test"}}})
	return w
}

// owner creates an account and returns the principal of its management key.
func (w *world) owner(email string) core.Principal {
	w.t.Helper()
	b, err := w.app.Accounts.Create(w.ctx, email, "")
	if err != nil {
		w.t.Fatal(err)
	}
	p, err := w.app.Auth.Authenticate(w.ctx, b.ManagementKey)
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

func TestAuthenticateRecordsUseAtMostOncePerInterval(t *testing.T) {
	w := newWorld(t)
	b, err := w.app.Accounts.Create(w.ctx, "a@example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	lastUsed := func() time.Time {
		keys, _, _ := w.store.Keys(w.ctx, b.Account.ID, core.KeyManagement, "", ports.Page{})
		return *keys[0].LastUsedAt
	}
	if _, err := w.app.Auth.Authenticate(w.ctx, b.ManagementKey); err != nil {
		t.Fatal(err)
	}
	first := lastUsed()
	w.clock.Advance(30 * time.Second)
	w.app.Auth.Authenticate(w.ctx, b.ManagementKey)
	if !lastUsed().Equal(first) {
		t.Fatal("last use written again within the interval")
	}
	w.clock.Advance(31 * time.Second)
	w.app.Auth.Authenticate(w.ctx, b.ManagementKey)
	if !lastUsed().After(first) {
		t.Fatal("last use not written after the interval")
	}
}

func TestGeneratedNamesAndAddressesAvoidClashes(t *testing.T) {
	w := newWorld(t)
	p := w.owner("a@example.com")
	name := "helper"
	first, err := w.app.Identities.Create(w.ctx, p, app.IdentityInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	// A second "helper" in another account wants the same address: it gets a suffix.
	q := w.owner("b@example.com")
	second, err := w.app.Identities.Create(w.ctx, q, app.IdentityInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	if first.Inbox != "helper@agents.test" || second.Inbox == first.Inbox || len(second.Inbox) != len("helper-xxxx@agents.test") {
		t.Fatalf("addresses %q and %q", first.Inbox, second.Inbox)
	}
	// Asking for a taken address is the caller's conflict, not retried.
	local := "helper"
	if _, err := w.app.Identities.Create(w.ctx, q, app.IdentityInput{EmailIdentifier: &local}); core.KindOf(err) != core.KindConflict {
		t.Fatalf("taken address: %v", err)
	}
}

func TestStoreFailureIsNotAValidationError(t *testing.T) {
	w := newWorld(t)
	p := w.owner("a@example.com")
	w.store.Fail = context.DeadlineExceeded
	if _, err := w.app.Identities.Create(w.ctx, p, app.IdentityInput{}); core.KindOf(err) != core.KindInternal {
		t.Fatalf("store failure surfaced as %v", err)
	}
	if err := w.app.Health.Ping(w.ctx); core.KindOf(err) != core.KindUnavailable {
		t.Fatalf("ping: %v", err)
	}
}

func TestResealMovesEveryValueToTheCurrentKey(t *testing.T) {
	w := newWorld(t)
	cipher := &memory.Cipher{}
	w.app = newApp(t, app.Deps{Ports: app.Ports{Store: w.store, Clock: w.clock, IDs: memory.IDs{}, Cipher: cipher}, Settings: app.Settings{MailDomains: []string{"agents.test"}}})
	p := w.owner("a@example.com")
	ident, err := w.app.Identities.Create(w.ctx, p, app.IdentityInput{})
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	for i := range 3 {
		if _, err := w.app.Vault.CreateSecret(w.ctx, p, ident.ID, app.SecretInput{Key: str(string(rune('a' + i))), Value: str("v")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.app.Vault.CreatePassword(w.ctx, p, ident.ID, app.PasswordInput{Domain: str("x.com"), Password: str("pw"), Notes: str("n")}); err != nil {
		t.Fatal(err)
	}
	cipher.Rotate()
	rep, err := w.app.Vault.Reseal(w.ctx)
	if err != nil || rep.Checked != 5 || rep.Resealed != 5 {
		t.Fatalf("first pass: %+v %v", rep, err)
	}
	rep, err = w.app.Vault.Reseal(w.ctx)
	if err != nil || rep.Checked != 5 || rep.Resealed != 0 {
		t.Fatalf("second pass should find nothing to do: %+v %v", rep, err)
	}
	list, _, err := w.app.Vault.ListPasswords(w.ctx, p, "", "", ports.Page{})
	if err != nil || len(list) != 1 || list[0].Password != "pw" || list[0].Notes != "n" {
		t.Fatalf("after reseal: %+v %v", list, err)
	}
}

func TestRecordCorrespondentKeepsExistingContacts(t *testing.T) {
	w := newWorld(t)
	p := w.owner("a@example.com")
	ident, _ := w.app.Identities.Create(w.ctx, p, app.IdentityInput{})
	who := core.Correspondent{AccountID: p.AccountID, IdentityID: ident.ID, Email: "New@Example.com", Name: "New Person"}
	for range 2 {
		if err := w.app.Contacts.RecordCorrespondent(w.ctx, who); err != nil {
			t.Fatal(err)
		}
	}
	// A malformed sender is skipped, not an error that would fail a delivery.
	if err := w.app.Contacts.RecordCorrespondent(w.ctx, core.Correspondent{AccountID: p.AccountID, IdentityID: ident.ID, Email: "not an address"}); err != nil {
		t.Fatal(err)
	}
	list, _, _ := w.app.Contacts.List(w.ctx, p, "", ports.ContactFilter{Source: core.ContactAuto})
	if len(list) != 1 || list[0].Email != "New@example.com" || list[0].DisplayName != "New Person" {
		t.Fatalf("auto contacts: %+v", list)
	}
}
