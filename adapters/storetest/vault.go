package storetest

import (
	"bytes"
	"testing"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

func (f *fixture) password(ident core.Identity, domain string) ports.StoredPassword {
	f.t.Helper()
	now := f.tick()
	p := ports.StoredPassword{
		Entry:    core.PasswordEntry{ID: uuid.NewString(), AccountID: ident.AccountID, IdentityID: ident.ID, Domain: domain, Username: "bot", CreatedAt: now, UpdatedAt: now},
		Password: []byte("sealed-" + domain),
	}
	f.must(f.s.CreatePassword(f.ctx, p))
	return p
}

func (f *fixture) secret(ident core.Identity, key string) ports.StoredSecret {
	f.t.Helper()
	now := f.tick()
	s := ports.StoredSecret{
		Secret: core.Secret{ID: uuid.NewString(), AccountID: ident.AccountID, IdentityID: ident.ID, Key: key, CreatedAt: now, UpdatedAt: now},
		Value:  []byte("sealed-" + key),
	}
	f.must(f.s.CreateSecret(f.ctx, s))
	return s
}

func ids[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

func passwordID(p ports.StoredPassword) string { return p.Entry.ID }
func secretID(s ports.StoredSecret) string     { return s.Secret.ID }

func wantIDs(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

func testPasswords(t *testing.T, f *fixture) {
	a := f.account()
	ident, _ := f.identity(a.ID)
	p := f.password(ident, "https://GitHub.com/login")
	p.Notes = []byte("sealed-notes")
	got, err := f.s.Password(f.ctx, a.ID, p.Entry.ID)
	f.must(err)
	if got.Entry != p.Entry || !bytes.Equal(got.Password, p.Password) || got.Notes != nil {
		t.Fatalf("read %+v, stored %+v", got, p)
	}
	p.Entry.Domain, p.Entry.Username, p.Entry.UpdatedAt = "example.org", "alice", f.tick()
	f.must(f.s.UpdatePassword(f.ctx, p))
	got, err = f.s.Password(f.ctx, a.ID, p.Entry.ID)
	f.must(err)
	if got.Entry != p.Entry || !bytes.Equal(got.Notes, p.Notes) {
		t.Fatalf("after update %+v, want %+v", got, p)
	}
	other := f.account()
	_, err = f.s.Password(f.ctx, other.ID, p.Entry.ID)
	wantKind(t, err, core.KindNotFound)
	wantKind(t, f.s.DeletePassword(f.ctx, other.ID, p.Entry.ID), core.KindNotFound)
	f.must(f.s.DeletePassword(f.ctx, a.ID, p.Entry.ID))
	_, err = f.s.Password(f.ctx, a.ID, p.Entry.ID)
	wantKind(t, err, core.KindNotFound)
}

func testPasswordsList(t *testing.T, f *fixture) {
	a := f.account()
	i1, _ := f.identity(a.ID)
	i2, _ := f.identity(a.ID)
	gh := f.password(i1, "https://GitHub.com/login")
	gist := f.password(i1, "gist.github.com")
	f.password(i1, "notgithub.com")
	other := f.password(i2, "github.com")
	list, _, err := f.s.Passwords(f.ctx, ports.PasswordFilter{Scope: core.Scope{AccountID: a.ID}, Host: "github.com"})
	f.must(err)
	wantIDs(t, "account, host github.com", ids(list, passwordID), []string{gh.Entry.ID, gist.Entry.ID, other.Entry.ID})
	list, _, err = f.s.Passwords(f.ctx, ports.PasswordFilter{Scope: core.Scope{AccountID: a.ID, IdentityID: i1.ID}, Host: "github.com"})
	f.must(err)
	wantIDs(t, "identity, host github.com", ids(list, passwordID), []string{gh.Entry.ID, gist.Entry.ID})
	list, _, err = f.s.Passwords(f.ctx, ports.PasswordFilter{Scope: core.Scope{AccountID: a.ID, IdentityID: i2.ID}})
	f.must(err)
	wantIDs(t, "identity", ids(list, passwordID), []string{other.Entry.ID})
	list, _, err = f.s.Passwords(f.ctx, ports.PasswordFilter{Scope: core.Scope{AccountID: a.ID, IdentityID: i1.ID, Empty: true}})
	f.must(err)
	wantIDs(t, "empty scope", ids(list, passwordID), nil)
}

func testSecretsUnique(t *testing.T, f *fixture) {
	a := f.account()
	i1, _ := f.identity(a.ID)
	i2, _ := f.identity(a.ID)
	s1 := f.secret(i1, "OPENAI_API_KEY")
	s2 := f.secret(i2, "OPENAI_API_KEY") // another identity may reuse the key
	now := f.tick()
	dup := ports.StoredSecret{Secret: core.Secret{ID: uuid.NewString(), AccountID: a.ID, IdentityID: i1.ID, Key: "OPENAI_API_KEY", CreatedAt: now, UpdatedAt: now}, Value: []byte("x")}
	wantConflictOn(t, f.s.CreateSecret(f.ctx, dup), "key")
	s3 := f.secret(i1, "OTHER")
	s3.Secret.Key = "OPENAI_API_KEY"
	wantConflictOn(t, f.s.UpdateSecret(f.ctx, s3), "key")
	s3.Secret.Key, s3.Value, s3.Secret.UpdatedAt = "RENAMED", []byte("new"), f.tick()
	f.must(f.s.UpdateSecret(f.ctx, s3))
	got, err := f.s.Secret(f.ctx, a.ID, s3.Secret.ID)
	f.must(err)
	if got.Secret != s3.Secret || !bytes.Equal(got.Value, s3.Value) {
		t.Fatalf("read %+v, want %+v", got, s3)
	}
	list, _, err := f.s.Secrets(f.ctx, ports.SecretFilter{Scope: core.Scope{AccountID: a.ID}, Key: "OPENAI_API_KEY"})
	f.must(err)
	wantIDs(t, "by key", ids(list, secretID), []string{s1.Secret.ID, s2.Secret.ID})
	list, _, err = f.s.Secrets(f.ctx, ports.SecretFilter{Scope: core.Scope{AccountID: a.ID, IdentityID: i1.ID}})
	f.must(err)
	wantIDs(t, "identity", ids(list, secretID), []string{s1.Secret.ID, s3.Secret.ID})
	other := f.account()
	list, _, err = f.s.Secrets(f.ctx, ports.SecretFilter{Scope: core.Scope{AccountID: other.ID, IdentityID: i1.ID}})
	f.must(err)
	wantIDs(t, "other account", ids(list, secretID), nil)
	wantKind(t, f.s.DeleteSecret(f.ctx, other.ID, s1.Secret.ID), core.KindNotFound)
	f.must(f.s.DeleteSecret(f.ctx, a.ID, s1.Secret.ID))
	_, err = f.s.Secret(f.ctx, a.ID, s1.Secret.ID)
	wantKind(t, err, core.KindNotFound)
}

func testSealedValues(t *testing.T, f *fixture) {
	a := f.account()
	ident, _ := f.identity(a.ID)
	p := f.password(ident, "a.example")
	p.Notes, p.Entry.UpdatedAt = []byte("sealed-notes"), f.tick()
	f.must(f.s.UpdatePassword(f.ctx, p))
	f.password(ident, "b.example") // no notes: one sealed value
	for i := range 3 {
		f.secret(ident, "k"+string(rune('0'+i)))
	}
	var all []ports.SealedValue
	var after ports.SealedValue
	for {
		page, err := f.s.SealedValues(f.ctx, after, 2)
		f.must(err)
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1]
	}
	if len(all) != 6 {
		t.Fatalf("want 6 sealed values (2+1 password fields, 3 secrets), got %d: %+v", len(all), all)
	}
	seen := map[string]bool{}
	for _, v := range all {
		key := v.Table + "/" + v.ID + "/" + v.Field
		if seen[key] || len(v.Sealed) == 0 {
			t.Fatalf("value %s repeated or empty", key)
		}
		seen[key] = true
	}
	v := all[0]
	ok, err := f.s.ReplaceSealed(f.ctx, v, []byte("resealed"))
	f.must(err)
	if !ok {
		t.Fatal("replacing an unchanged value failed")
	}
	ok, err = f.s.ReplaceSealed(f.ctx, v, []byte("stale"))
	f.must(err)
	if ok {
		t.Fatal("replaced a value that had changed since it was read")
	}
	again, err := f.s.SealedValues(f.ctx, ports.SealedValue{}, 100)
	f.must(err)
	for _, w := range again {
		if w.Table == v.Table && w.ID == v.ID && w.Field == v.Field && string(w.Sealed) != "resealed" {
			t.Fatalf("after replace: %q", w.Sealed)
		}
	}
}
