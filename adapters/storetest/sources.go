package storetest

import (
	"bytes"
	"slices"
	"sync"
	"testing"
	"time"

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

	all := f.claimSources("worker", f.now, f.now.Add(time.Minute))
	if len(all) != 2 {
		t.Fatalf("claimed sources: %+v", all)
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
	if all := f.claimSources("worker", f.now, f.now.Add(time.Minute)); len(all) != 0 {
		t.Fatalf("sources outlived their account: %+v", all)
	}
}

// claimSources claims sources for owner and returns them.
func (f *fixture) claimSources(owner string, now, until time.Time) []ports.StoredMailSource {
	f.t.Helper()
	got, err := f.s.ClaimMailSources(f.ctx, owner, now, until)
	f.must(err)
	return got
}

// sourceIDs lists the ids of sources, sorted.
func sourceIDs(sources []ports.StoredMailSource) []string {
	var ids []string
	for _, s := range sources {
		ids = append(ids, s.Source.ID)
	}
	slices.Sort(ids)
	return ids
}

func testSourceLeases(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	_, in2 := f.identity(a.ID)
	s1, s2 := f.source(in, "imap.example.org"), f.source(in2, "mail.example.net")
	both := sourceIDs([]ports.StoredMailSource{s1, s2})
	lease := 30 * time.Second
	claim := func(owner string, at time.Time) []string {
		t.Helper()
		return sourceIDs(f.claimSources(owner, at, at.Add(lease)))
	}
	start := f.now
	if got := claim("a", start); !slices.Equal(got, both) {
		t.Fatalf("a's first claim: %v", got)
	}
	if got := claim("b", start.Add(time.Second)); len(got) != 0 {
		t.Fatalf("b took leased sources: %v", got)
	}
	// a renews; b, which comes after a's first lease would have run out, finds them held.
	if got := claim("a", start.Add(20*time.Second)); !slices.Equal(got, both) {
		t.Fatalf("a's renewal: %v", got)
	}
	if got := claim("b", start.Add(40*time.Second)); len(got) != 0 {
		t.Fatalf("b took renewed sources: %v", got)
	}
	// a stops renewing (it crashed): once its lease has run out, b takes over.
	if got := claim("b", start.Add(50*time.Second)); !slices.Equal(got, both) {
		t.Fatalf("b's takeover: %v", got)
	}
	if got := claim("a", start.Add(51*time.Second)); len(got) != 0 {
		t.Fatalf("a kept sources b took over: %v", got)
	}
	// New settings keep the lease.
	replaced := s1
	replaced.Source.Host, replaced.Source.UpdatedAt = "imap2.example.org", f.tick()
	f.must(f.s.SaveMailSource(f.ctx, replaced))
	if got := f.claimSources("b", start.Add(52*time.Second), start.Add(52*time.Second+lease)); len(got) != 2 ||
		got[slices.IndexFunc(got, func(s ports.StoredMailSource) bool { return s.Source.ID == s1.Source.ID })].Source.Host != "imap2.example.org" {
		t.Fatalf("b's claim after new settings: %+v", got)
	}
	// A release hands the sources over at once.
	f.must(f.s.ReleaseMailSources(f.ctx, "b"))
	if got := claim("a", start.Add(53*time.Second)); !slices.Equal(got, both) {
		t.Fatalf("a's claim after b's release: %v", got)
	}

	// Instances claiming at the same moment share the sources out: each is held once.
	f.must(f.s.ReleaseMailSources(f.ctx, "a"))
	at := start.Add(time.Hour)
	var mu sync.Mutex
	var wg sync.WaitGroup
	held := map[string]int{}
	for _, owner := range []string{"c", "d", "e", "f"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := f.s.ClaimMailSources(f.ctx, owner, at, at.Add(lease))
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range sourceIDs(got) {
				held[id]++
			}
		}()
	}
	wg.Wait()
	if len(held) != 2 || held[s1.Source.ID] != 1 || held[s2.Source.ID] != 1 {
		t.Fatalf("concurrent claims: %v", held)
	}
}
