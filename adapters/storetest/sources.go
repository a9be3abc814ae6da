package storetest

import (
	"bytes"
	"testing"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// source stores a mail source for an inbox.
func (f *fixture) source(in core.Inbox, host string) ports.StoredMailSource {
	f.t.Helper()
	now := f.tick()
	s := ports.StoredMailSource{
		Source: core.MailSource{ID: in.UUID, AccountID: in.AccountID, IdentityID: in.IdentityID, InboxID: in.ID,
			Host: host, Port: 993, Username: "agent", TLS: core.SourceImplicitTLS, Folder: "INBOX", CreatedAt: now, UpdatedAt: now},
		Password: []byte("sealed-" + host),
	}
	f.must(f.s.SaveMailSource(f.ctx, s))
	return s
}

func testSources(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	_, in2 := f.identity(a.ID)
	s := f.source(in, "imap.example.org")
	f.source(in2, "mail.example.net")
	got, err := f.s.MailSource(f.ctx, a.ID, in.ID)
	f.must(err)
	if got.Source != s.Source || !bytes.Equal(got.Password, s.Password) {
		t.Fatalf("read %+v, want %+v", got, s)
	}
	_, err = f.s.MailSource(f.ctx, f.account().ID, in.ID)
	wantKind(t, err, core.KindNotFound)

	synced := f.tick()
	p := core.SourceProgress{UIDValidity: 7, LastUID: 4000000000, Connected: true, LastSyncAt: &synced}
	ok, err := f.s.SaveSourceProgress(f.ctx, s.Source.ID, s.Source.UpdatedAt, p)
	f.must(err)
	if !ok {
		t.Fatal("progress for the current settings was refused")
	}
	got, _ = f.s.MailSource(f.ctx, a.ID, in.ID)
	if pr := got.Source.Progress; pr.UIDValidity != 7 || pr.LastUID != 4000000000 || !pr.Connected || !pr.LastSyncAt.Equal(synced) {
		t.Fatalf("progress %+v", pr)
	}

	// New settings: a worker still running with the old ones records nothing.
	replaced := s
	replaced.Source.Host, replaced.Source.UpdatedAt, replaced.Password = "imap2.example.org", f.tick(), []byte("sealed-2")
	replaced.Source.Progress = core.SourceProgress{}
	f.must(f.s.SaveMailSource(f.ctx, replaced))
	ok, err = f.s.SaveSourceProgress(f.ctx, s.Source.ID, s.Source.UpdatedAt, core.SourceProgress{LastError: "stale"})
	f.must(err)
	if ok {
		t.Fatal("progress for replaced settings was recorded")
	}
	got, _ = f.s.MailSource(f.ctx, a.ID, in.ID)
	if got.Source != replaced.Source || string(got.Password) != "sealed-2" {
		t.Fatalf("after replace %+v", got.Source)
	}

	all, err := f.s.AllMailSources(f.ctx)
	f.must(err)
	if len(all) != 2 {
		t.Fatalf("all sources: %d", len(all))
	}
	wantKind(t, f.s.DeleteMailSource(f.ctx, f.account().ID, in.ID), core.KindNotFound)
	f.must(f.s.DeleteMailSource(f.ctx, a.ID, in.ID))
	_, err = f.s.MailSource(f.ctx, a.ID, in.ID)
	wantKind(t, err, core.KindNotFound)
	ok, err = f.s.SaveSourceProgress(f.ctx, s.Source.ID, replaced.Source.UpdatedAt, core.SourceProgress{})
	if err != nil || ok {
		t.Fatalf("progress for a deleted source: %v %v", ok, err)
	}
}

func testSourcesSealedAndCascade(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	s := f.source(in, "imap.example.org")
	values, err := f.s.SealedValues(f.ctx, ports.SealedValue{}, 100)
	f.must(err)
	if len(values) != 1 || values[0].Table != "mail_sources" || values[0].Field != "password" || values[0].ID != s.Source.ID {
		t.Fatalf("sealed values %+v", values)
	}
	ok, err := f.s.ReplaceSealed(f.ctx, values[0], []byte("resealed"))
	f.must(err)
	got, _ := f.s.MailSource(f.ctx, a.ID, in.ID)
	if !ok || string(got.Password) != "resealed" {
		t.Fatalf("reseal: %v %q", ok, got.Password)
	}
	f.must(f.s.DeleteAccount(f.ctx, a.ID))
	if all, _ := f.s.AllMailSources(f.ctx); len(all) != 0 {
		t.Fatalf("sources outlived their account: %+v", all)
	}
}
