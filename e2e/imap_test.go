package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/callsign/callsign/adapters/imap/dovecottest"
	"github.com/callsign/callsign/adapters/sqlstore"
)

// agentWithKey creates an identity and an identity key for it.
func (r *running) agentWithKey(mgmt, name string) (inbox, key string) {
	r.t.Helper()
	var ident struct{ UUID, Inbox string }
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": name}, &ident)
	var k struct{ Key string }
	r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID}, &k)
	return ident.Inbox, k.Key
}

func plainMail(to, msgID, subject string) string {
	return "From: Alice <alice@example.org>\r\nTo: " + to + "\r\nSubject: " + subject + "\r\nMessage-ID: <" + msgID +
		">\r\nDate: Sat, 21 Nov 2026 08:00:00 +0000\r\n\r\nHello about " + subject + ".\r\n"
}

// TestIMAPServerEndToEnd: mail arrives over SMTP; go-imap's client and
// Python's imaplib log in with an identity key, list, fetch, mark seen (the
// API shows it) and hear of new mail during IDLE.
func TestIMAPServerEndToEnd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("imap@example.com")
		inbox, key := r.agentWithKey(mgmt, "Reader")
		smtpAddr, imapAddr := r.svc.SMTPAddr(), r.svc.IMAPAddr()
		sendSMTP(t, smtpAddr, "alice@example.org", []string{inbox}, plainMail(inbox, "first@example.org", "First"))

		c, err := imapclient.DialInsecure(imapAddr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Login(inbox, mgmt).Wait(); err == nil {
			t.Fatal("a management key logged in over IMAP")
		}
		c, err = imapclient.DialInsecure(imapAddr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Login(inbox, key).Wait(); err != nil {
			t.Fatal(err)
		}
		boxes, err := c.List("", "*", nil).Collect()
		if err != nil || len(boxes) != 3 { // INBOX, Sent, Junk
			t.Fatalf("LIST: %v %+v", err, boxes)
		}
		if _, err := c.Select("INBOX", nil).Wait(); err != nil {
			t.Fatal(err)
		}
		msgs, err := c.Fetch(imap.SeqSetNum(1), &imap.FetchOptions{UID: true, Envelope: true}).Collect()
		if err != nil || len(msgs) != 1 || msgs[0].Envelope.Subject != "First" {
			t.Fatalf("FETCH: %v %+v", err, msgs)
		}
		if err := c.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagSeen}}, nil).Close(); err != nil {
			t.Fatal(err)
		}
		var m struct {
			IsRead bool `json:"is_read"`
		}
		r.call("GET", fmt.Sprintf("/api/email-messages/%d/", msgs[0].UID), key, nil, &m)
		if !m.IsRead {
			t.Fatal("\\Seen over IMAP is not is_read in the API")
		}

		// Python's imaplib, a client we did not write.
		out := runImaplib(t, imapAddr, inbox, key, func() {
			sendSMTP(t, smtpAddr, "alice@example.org", []string{inbox}, plainMail(inbox, "second@example.org", "Second"))
		})
		for _, want := range []string{"LOGIN OK", "LIST INBOX", `LIST "Sent"`, "SELECT 1", "SUBJECT First", "SEEN (\\Seen)", "IDLE * 2 EXISTS", "SEARCH UNSEEN 2"} {
			if !strings.Contains(out, want) {
				t.Errorf("imaplib's transcript lacks %q:\n%s", want, out)
			}
		}
	})
}

// imaplibScript logs in, lists, fetches, marks seen, then idles until the
// server announces a message (the test delivers one when it prints IDLING).
const imaplibScript = `
import imaplib, re, sys
host, port, user, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def say(*a): print(*a, flush=True)
m = imaplib.IMAP4(host, port)
typ, _ = m.login(user, key); say("LOGIN", typ)
typ, boxes = m.list()
for b in boxes: say("LIST", b.decode().split(' "/" ')[-1])
typ, data = m.select("INBOX"); say("SELECT", data[0].decode())
typ, data = m.fetch("1", "(BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
say("SUBJECT", data[0][1].decode().split(":", 1)[1].strip())
typ, data = m.store("1", "+FLAGS", "(\\Seen)")
say("SEEN", re.search(r"FLAGS (\([^)]*\))", data[0].decode()).group(1))
tag = m._new_tag()
m.send(tag + b" IDLE\r\n")
say("CONTINUE", m.readline().decode().strip())
say("IDLING")
m.sock.settimeout(20)
while True:
    line = m.readline().decode().strip()
    if line.endswith("EXISTS"):
        say("IDLE", line); break
m.send(b"DONE\r\n")
while not m.readline().startswith(tag): pass
typ, data = m.search(None, "UNSEEN"); say("SEARCH UNSEEN", data[0].decode())
m.logout()
`

// runImaplib runs the script with the system's python3, calling during
// once it idles, and returns its transcript.
func runImaplib(t *testing.T, addr, user, key string, during func()) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	script := filepath.Join(t.TempDir(), "client.py")
	if err := os.WriteFile(script, []byte(imaplibScript), 0o600); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(python, script, host, port, user, key)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	var transcript strings.Builder
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		transcript.WriteString(lines.Text() + "\n")
		if lines.Text() == "IDLING" {
			during()
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("imaplib: %v\n%s\n%s", err, transcript.String(), stderr.String())
	}
	return transcript.String()
}

// TestIMAPSourceEndToEnd: an inbox is fed from a Dovecot mailbox set up
// through the API; existing mail arrives, new mail arrives through IDLE,
// and GET shows the source's state.
func TestIMAPSourceEndToEnd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		dove := dovecottest.Start(t, map[string]string{"feed": "feedpass"})
		dove.Append("feed", "feedpass", "INBOX", plainMail("feed@example.org", "old-1@example.org", "Old one"),
			plainMail("feed@example.org", "old-2@example.org", "Old two"))
		// Dovecot is on loopback, which sources reach only when allowed.
		r := start(t, d, map[string]string{"CALLSIGN_SOURCES_ALLOW_PRIVATE": "true"})
		mgmt := r.bootstrap("source@example.com")
		_, key := r.agentWithKey(mgmt, "Fed")
		var in []struct{ ID int64 }
		r.call("GET", "/api/email/", key, nil, &in)
		src := fmt.Sprintf("/api/email/%d/source/", in[0].ID)
		body := map[string]any{"host": dove.Host, "port": dove.Port, "username": "feed", "password": "feedpass", "tls": "plain"}
		if s := r.call("PUT", src, key, body, nil); s != 201 {
			t.Fatalf("PUT: %d", s)
		}
		count := func() int {
			var pg apiPage
			r.call("GET", "/api/email-messages/", key, nil, &pg)
			return pg.Count
		}
		poll(t, "the existing mail", func() bool { return count() == 2 })
		var state struct {
			Connected  bool    `json:"connected"`
			LastError  *string `json:"last_error"`
			LastSyncDT *string `json:"last_sync_dt"`
			Password   *string `json:"password"`
		}
		poll(t, "a connected state", func() bool {
			r.call("GET", src, key, nil, &state)
			return state.Connected && state.LastSyncDT != nil
		})
		if state.LastError != nil || state.Password != nil {
			t.Fatalf("state %+v", state)
		}
		dove.Append("feed", "feedpass", "INBOX", plainMail("feed@example.org", "new@example.org", "New one"))
		poll(t, "the new mail through IDLE", func() bool { return count() == 3 })
		if s := r.call("DELETE", src, key, nil, nil); s != 204 {
			t.Fatalf("DELETE: %d", s)
		}
	})
}

// By default a source may not name this machine, in any notation.
func TestIMAPSourceRefusesLoopbackByDefault(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("strict@example.com")
	_, key := r.agentWithKey(mgmt, "Strict")
	var in []struct{ ID int64 }
	r.call("GET", "/api/email/", key, nil, &in)
	for _, host := range []string{"127.0.0.1", "0x7f.1", "localhost", "169.254.169.254"} {
		var problems map[string]any
		body := map[string]any{"host": host, "port": 1143, "username": "feed", "password": "feedpass", "tls": "starttls"}
		if s := r.call("PUT", fmt.Sprintf("/api/email/%d/source/", in[0].ID), key, body, &problems); s != 400 || problems["host"] == nil {
			t.Errorf("%s: %d %v; want 400 naming host", host, s, problems)
		}
	}
}
