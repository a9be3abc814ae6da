package storetest

import (
	"bytes"
	"fmt"
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

func init() {
	register(
		testCase{"sources/save, replace, list, progress only for the current settings, delete", func(t *testing.T, f *fixture) {
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
		}},
		testCase{"sources/passwords are sealed values, and go with their account", func(t *testing.T, f *fixture) {
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
		}},
		testCase{"mail/mailbox entries list one inbox and direction by id", func(t *testing.T, f *fixture) {
			a := f.account()
			_, in := f.identity(a.ID)
			_, other := f.identity(a.ID)
			m1 := f.save(incoming(in, "1@x", "one", f.tick(), ""))[0]
			out := incoming(in, "2@x", "two", f.tick(), "")
			out.Message.Direction, out.Message.IsRead = core.Outgoing, true
			m2 := f.save(out)[0]
			f.save(incoming(other, "3@x", "three", f.tick(), ""))
			m4 := f.save(incoming(in, "4@x", "four", f.tick(), ""))[0]
			f.must(f.s.SetRead(f.ctx, a.ID, m4.ID, true))
			entries, err := f.s.MailboxEntries(f.ctx, in.ID, core.Incoming)
			f.must(err)
			got := ids(entries, func(e ports.MailboxEntry) string { return fmt.Sprint(e.ID, e.IsRead, e.Size) })
			size := len("Subject: one\r\n\r\nBody\r\n")
			wantIDs(t, "incoming", got, []string{fmt.Sprint(m1.ID, false, size), fmt.Sprint(m4.ID, true, size+1)})
			if !entries[0].CreatedAt.Equal(m1.CreatedAt) {
				t.Fatalf("created %v, want %v", entries[0].CreatedAt, m1.CreatedAt)
			}
			sent, err := f.s.MailboxEntries(f.ctx, in.ID, core.Outgoing)
			f.must(err)
			wantIDs(t, "outgoing", ids(sent, func(e ports.MailboxEntry) string { return fmt.Sprint(e.ID) }), []string{fmt.Sprint(m2.ID)})
		}},
	)
}
