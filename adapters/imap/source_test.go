package imap_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	imapadapter "github.com/callsign/callsign/adapters/imap"
	"github.com/callsign/callsign/adapters/imap/dovecottest"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// mailAt is a small message with a Message-ID.
func mailAt(id, subject string) string {
	return "From: Feed <feed@example.org>\r\nTo: agent@example.org\r\nSubject: " + subject + "\r\nMessage-ID: <" + id +
		">\r\nDate: Sat, 21 Nov 2026 08:00:00 +0000\r\n\r\nBody of " + subject + "\r\n"
}

// supervise runs the source workers until the test ends (or stop is called).
func (w *world) supervise(opts imapadapter.SupervisorOptions) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { imapadapter.NewSupervisor(w.app.Sources, opts).Run(ctx); close(done) }()
	stop = func() { cancel(); <-done }
	w.t.Cleanup(stop)
	return stop
}

// fast keeps the tests quick: IDLE, not the recheck, must bring new mail.
var fast = imapadapter.SupervisorOptions{Lease: time.Hour, RetryFirst: 50 * time.Millisecond, RetryMax: 400 * time.Millisecond, Recheck: time.Hour}

func (w *world) putSource(a agent, d *dovecottest.Server, user, password, folder string) core.MailSource {
	w.t.Helper()
	host, tlsMode := d.Host, string(core.SourcePlain)
	src, _, err := w.app.Sources.Put(w.ctx, a.p, a.inbox.ID, app.SourceInput{Host: &host, Port: &d.Port, Username: &user,
		Password: &password, TLS: &tlsMode, Folder: &folder})
	if err != nil {
		w.t.Fatal(err)
	}
	return src
}

func (w *world) source(a agent) core.MailSource {
	w.t.Helper()
	src, err := w.app.Sources.Get(w.ctx, a.p, a.inbox.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	return src
}

// subjects lists an inbox's subjects, failing on any duplicate Message-ID.
func (w *world) subjects(in core.Inbox) []string {
	w.t.Helper()
	seen := map[string]bool{}
	var out []string
	for _, m := range w.messages(in) {
		if seen[m.MessageID] {
			w.t.Fatalf("message %s delivered twice", m.MessageID)
		}
		seen[m.MessageID] = true
		out = append(out, m.Subject)
	}
	return out
}

func (w *world) waitForSubjects(in core.Inbox, n int) []string {
	w.t.Helper()
	eventually(w.t, fmt.Sprintf("%d messages", n), func() bool { return len(w.subjects(in)) >= n })
	got := w.subjects(in)
	if len(got) != n {
		w.t.Fatalf("want %d messages, got %v", n, got)
	}
	return got
}

func TestSourceFirstSyncThenIdlePush(t *testing.T) {
	d := dovecottest.Start(t, map[string]string{"feed": "feedpass"})
	d.Append("feed", "feedpass", "INBOX", mailAt("1@feed", "one"), mailAt("2@feed", "two"),
		"From: feed@example.org\r\nSubject: no id\r\n\r\nA message without a Message-ID.\r\n")
	w := newWorld(t)
	alice := w.agent("alice")
	w.putSource(alice, d, "feed", "feedpass", "INBOX")
	w.supervise(fast)

	if got := w.waitForSubjects(alice.inbox, 3); strings.Join(got, ",") != "one,two,no id" {
		t.Fatalf("first sync: %v", got)
	}
	eventually(t, "a recorded sync", func() bool { return w.source(alice).Progress.LastSyncAt != nil })
	st := w.source(alice)
	if !st.Progress.Connected || st.Progress.LastError != "" || st.Progress.LastUID != 3 || st.Password != "" {
		t.Fatalf("state %+v", st.Progress)
	}
	// Pulling uses EXAMINE: the source's own read state is left alone.
	c := d.Client("feed", "feedpass")
	if s, err := c.Status("INBOX", &imapStatusUnseen).Wait(); err != nil || *s.NumUnseen != 3 {
		t.Fatalf("the source's unseen count: %v %+v", err, s)
	}

	d.Append("feed", "feedpass", "INBOX", mailAt("3@feed", "pushed"))
	start := time.Now()
	w.waitForSubjects(alice.inbox, 4)
	if time.Since(start) > 5*time.Second {
		t.Fatal("IDLE did not bring the new message promptly")
	}
	m := w.messages(alice.inbox)[3]
	if m.Direction != core.Incoming || m.FromEmail != "feed@example.org" || strings.TrimSpace(m.Text) != "Body of pushed" {
		t.Fatalf("delivered as %+v", m)
	}
}

func TestSourceSurvivesADroppedConnection(t *testing.T) {
	d := dovecottest.Start(t, map[string]string{"feed": "feedpass"})
	d.Append("feed", "feedpass", "INBOX", mailAt("1@feed", "one"))
	w := newWorld(t)
	alice := w.agent("alice")
	w.putSource(alice, d, "feed", "feedpass", "INBOX")
	w.supervise(fast)
	w.waitForSubjects(alice.inbox, 1)

	d.Stop()
	eventually(t, "the state to show the lost connection", func() bool {
		p := w.source(alice).Progress
		return !p.Connected && p.LastError != ""
	})
	d.Restart()
	d.Append("feed", "feedpass", "INBOX", mailAt("2@feed", "after the drop"))
	w.waitForSubjects(alice.inbox, 2)
	eventually(t, "connected again", func() bool { return w.source(alice).Progress.Connected })
}

func TestSourceRestartMidSyncDeliversEachMessageOnce(t *testing.T) {
	d := dovecottest.Start(t, map[string]string{"feed": "feedpass"})
	var raws []string
	for i := range 150 {
		raws = append(raws, mailAt(fmt.Sprintf("%d@feed", i), fmt.Sprint("m", i)))
	}
	d.Append("feed", "feedpass", "INBOX", raws...)
	w := newWorld(t)
	alice := w.agent("alice")
	w.putSource(alice, d, "feed", "feedpass", "INBOX")

	stop := w.supervise(fast)
	eventually(t, "some messages", func() bool { return len(w.messages(alice.inbox)) >= 5 })
	stop() // the service stops in the middle of the first sync
	partial := len(w.messages(alice.inbox))
	// The worst a crash can leave: messages stored but the cursor not yet moved.
	src := w.source(alice)
	back := src.Progress
	back.LastUID = max(back.LastUID, 3) - 3
	if ok, err := w.store.SaveSourceProgress(w.ctx, src.ID, src.UpdatedAt, back); err != nil || !ok {
		t.Fatalf("winding the cursor back: %v %v", ok, err)
	}
	t.Logf("stopped after %d of 150; cursor wound back to %d", partial, back.LastUID)

	w.supervise(fast)
	w.waitForSubjects(alice.inbox, 150)
}

func TestSourceUIDValidityChangeResyncsWithoutDuplicates(t *testing.T) {
	d := dovecottest.Start(t, map[string]string{"feed": "feedpass"})
	before := d.Append("feed", "feedpass", "Feed", mailAt("1@feed", "one"), mailAt("2@feed", "two"))
	w := newWorld(t)
	alice := w.agent("alice")
	w.putSource(alice, d, "feed", "feedpass", "Feed")
	stop := w.supervise(fast)
	w.waitForSubjects(alice.inbox, 2)
	stop()

	after := d.Recreate("feed", "feedpass", "Feed", mailAt("2@feed", "two"), mailAt("1@feed", "one"), mailAt("3@feed", "three"))
	if after == before {
		t.Fatalf("Dovecot kept UIDVALIDITY %d", before)
	}
	w.supervise(fast)
	if got := w.waitForSubjects(alice.inbox, 3); got[2] != "three" {
		t.Fatalf("after the resync: %v", got)
	}
	eventually(t, "the new UIDVALIDITY recorded", func() bool {
		p := w.source(alice).Progress
		return p.UIDValidity == after && p.LastUID == 3
	})
}

func TestSourceWrongPasswordShowsAndBacksOffThenPutFixesIt(t *testing.T) {
	d := dovecottest.Start(t, map[string]string{"feed": "feedpass"})
	d.Append("feed", "feedpass", "INBOX", mailAt("1@feed", "one"))
	w := newWorld(t)
	alice := w.agent("alice")
	w.putSource(alice, d, "feed", "wrong", "INBOX")
	backoff := fast
	backoff.RetryFirst, backoff.RetryMax = 200*time.Millisecond, time.Second
	w.supervise(backoff)

	eventually(t, "the login error in the state", func() bool {
		return w.source(alice).Progress.LastError == core.SourceErrorAuth
	})
	time.Sleep(3 * time.Second)
	// Dovecot takes 0.5 s to refuse, so a tight loop would fail 7 times in
	// these 3.5 s; pauses of 0.2, 0.4, 0.8 and 1 s leave room for 4 or 5.
	if _, failed := d.Logins(); failed < 3 || failed > 5 {
		t.Fatalf("%d failed logins in about 3.5 s\n%s", failed, d.Log())
	}
	if p := w.source(alice).Progress; p.Connected {
		t.Fatalf("connected with a wrong password: %+v", p)
	}

	// A PUT with the right password takes effect without a restart.
	w.putSource(alice, d, "feed", "feedpass", "INBOX")
	w.waitForSubjects(alice.inbox, 1)
	eventually(t, "the error cleared", func() bool {
		p := w.source(alice).Progress
		return p.Connected && p.LastError == ""
	})

	// DELETE stops the worker: later mail stays where it is.
	if err := w.app.Sources.Delete(w.ctx, alice.p, alice.inbox.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	d.Append("feed", "feedpass", "INBOX", mailAt("2@feed", "after delete"))
	time.Sleep(500 * time.Millisecond)
	if got := w.subjects(alice.inbox); len(got) != 1 {
		t.Fatalf("pulled after DELETE: %v", got)
	}
}

var imapStatusUnseen = imap.StatusOptions{NumUnseen: true}

// TestSourcePulledByOneInstanceAtATime: two supervisors (two instances) on
// one store; one holds the source and pulls it, the other stays idle until
// the first stops, then takes over.
func TestSourcePulledByOneInstanceAtATime(t *testing.T) {
	d := dovecottest.Start(t, map[string]string{"feed": "feedpass"})
	d.Append("feed", "feedpass", "INBOX", mailAt("1@feed", "one"))
	w := newWorld(t)
	alice := w.agent("alice")
	w.putSource(alice, d, "feed", "feedpass", "INBOX")
	leased := fast
	leased.Lease = 600 * time.Millisecond // renewed every 200 ms
	stopFirst := w.supervise(leased)
	w.waitForSubjects(alice.inbox, 1)
	logins, _ := d.Logins() // the test's own Append logs in too
	w.supervise(leased)
	time.Sleep(time.Second) // several rounds of claims by both
	if ok, _ := d.Logins(); ok != logins {
		t.Fatalf("%d logins, then %d while one instance holds the source\n%s", logins, ok, d.Log())
	}
	d.Append("feed", "feedpass", "INBOX", mailAt("2@feed", "two"))
	w.waitForSubjects(alice.inbox, 2)

	stopFirst() // it releases its lease: the second takes over at its next claim
	d.Append("feed", "feedpass", "INBOX", mailAt("3@feed", "three"))
	w.waitForSubjects(alice.inbox, 3)
	// Two Appends and the second instance's worker.
	if ok, _ := d.Logins(); ok != logins+3 {
		t.Fatalf("%d logins after the takeover\n%s", ok, d.Log())
	}
}

// A source whose account is at its storage quota pauses with last_error
// "quota" without moving past the message, and goes on once mail is
// deleted.
func TestSourcePausesAtTheStorageQuota(t *testing.T) {
	d := dovecottest.Start(t, map[string]string{"feed": "feedpass"})
	d.Append("feed", "feedpass", "INBOX", mailAt("1@feed", "one"), mailAt("2@feed", "two"))
	// One byte: the first message is taken (the account was under), the
	// second waits.
	w := newWorld(t, core.Limits{core.QuotaStorage: 1})
	alice := w.agent("alice")
	w.putSource(alice, d, "feed", "feedpass", "INBOX")
	w.supervise(fast)

	eventually(t, "the quota in the state", func() bool { return w.source(alice).Progress.LastError == core.SourceErrorQuota })
	if got := w.subjects(alice.inbox); len(got) != 1 || got[0] != "one" {
		t.Fatalf("delivered before the quota: %v", got)
	}
	if p := w.source(alice).Progress; p.LastUID != 1 {
		t.Fatalf("the cursor moved past the waiting message: %+v", p)
	}
	if err := w.app.Reading.DeleteMessage(w.ctx, alice.p, w.messages(alice.inbox)[0].ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second message after room was made", func() bool {
		got := w.subjects(alice.inbox)
		return len(got) == 1 && got[0] == "two" && w.source(alice).Progress.LastError == ""
	})
}
