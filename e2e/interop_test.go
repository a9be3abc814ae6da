package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/mailmime"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/core"
)

// The interop tests use mail and mail software nobody here wrote: Python's
// email test messages (Debian's libpython3.11-testsuite), enmime's test
// messages (from the Go module cache) and mbsync (Debian's isync). Without
// them a test skips, unless CALLSIGN_TEST_REQUIRE_ALL=1 (CI), where it fails.

// pythonCorpus is where Debian installs Python's email test messages.
const pythonCorpus = "/usr/lib/python3.11/test/test_email/data"

// notMessages are the corpus files that are no mail message at all (prose,
// a line of code), which SMTP refuses with 554 5.6.0, as it should.
var notMessages = map[string]bool{"msg_19.txt": true, "erroneous.raw": true}

// missing skips the test for want of a tool or corpus, or fails it in CI.
func missing(t *testing.T, what, install string) {
	t.Helper()
	if os.Getenv(requireAllVar) == "1" {
		t.Fatalf("%s is missing (%s), and %s=1 requires the interop tests", what, install, requireAllVar)
	}
	t.Skipf("%s is missing (%s): skipping", what, install)
}

// corpus lists the test messages: Python's and enmime's.
func corpus(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(pythonCorpus, "msg_*.txt"))
	if len(files) == 0 {
		missing(t, "Python's email test data", "apt-get install libpython3.11-testsuite")
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/jhillyerd/enmime/v2").Output()
	if err != nil {
		t.Fatalf("finding enmime in the module cache: %v", err)
	}
	raw, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "testdata", "*", "*.raw"))
	if len(raw) == 0 {
		t.Fatal("enmime's testdata is not in the module cache")
	}
	return append(files, raw...)
}

// asSent is what a message becomes on its way through SMTP: lines end in
// CRLF, and the last line is ended.
func asSent(raw []byte) []byte {
	var b bytes.Buffer
	for len(raw) > 0 {
		line, rest, found := bytes.Cut(raw, []byte("\n"))
		b.Write(bytes.TrimSuffix(line, []byte("\r")))
		if found || len(line) > 0 {
			b.WriteString("\r\n")
		}
		raw = rest
	}
	return b.Bytes()
}

// pythonView is what Python's email package reads from a message.
type pythonView struct {
	Subject string `json:"subject"`
	From    string `json:"from"`
	Clean   bool   `json:"clean"` // no defects in the message or the two fields
}

const pythonReader = `
import email, email.policy, json, sys
out = {}
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        msg = email.message_from_binary_file(f, policy=email.policy.default)
    view = {"subject": "", "from": "", "clean": not msg.defects}
    try:
        subject, sender = msg["subject"], msg["from"]
        view["subject"] = str(subject or "")
        if sender is not None and len(sender.addresses) > 0:
            view["from"] = sender.addresses[0].addr_spec
        view["clean"] = view["clean"] and not (subject is not None and subject.defects) and not (sender is not None and sender.defects)
    except Exception:
        view["clean"] = False
    out[path] = view
json.dump(out, sys.stdout)
`

// readWithPython has the system's Python read every file once.
func readWithPython(t *testing.T, files []string) map[string]pythonView {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		missing(t, "python3", "apt-get install python3")
	}
	out, err := exec.Command(python, append([]string{"-c", pythonReader}, files...)...).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	views := map[string]pythonView{}
	if err := json.Unmarshal(out, &views); err != nil {
		t.Fatal(err)
	}
	return views
}

// TestMailCorpus feeds about 130 real-world messages, broken ones included,
// through the SMTP listener, then reads each back through the API (the
// source byte for byte, subject and sender as Python reads them) and through
// IMAP (structure, envelope and body in one FETCH, on one connection).
func TestMailCorpus(t *testing.T) {
	t.Parallel()
	files := corpus(t)
	python := readWithPython(t, files)
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("corpus@example.com")
	inbox, key := r.agentWithKey(mgmt, "Corpus")

	c, err := smtp.Dial(r.svc.SMTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var stored []string // the files accepted, in the order sent
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		err = c.SendMail("corpus@example.org", []string{inbox}, bytes.NewReader(raw))
		name := filepath.Base(f)
		switch {
		case notMessages[name]:
			var reply *smtp.SMTPError
			if !errors.As(err, &reply) || reply.Code != 554 {
				t.Errorf("%s is no message, yet SMTP answered %v", name, err)
			}
		case err != nil:
			t.Errorf("%s: SMTP refused it: %v", name, err)
		default:
			stored = append(stored, f)
		}
	}

	var msgs []apiMessage
	for offset := 0; ; offset += 200 {
		var pg apiPage
		r.call("GET", fmt.Sprintf("/api/email-messages/?limit=200&offset=%d", offset), key, nil, &pg)
		msgs = append(msgs, pg.Results...)
		if pg.Next == nil {
			break
		}
	}
	if len(msgs) != len(stored) {
		t.Fatalf("%d messages listed, %d accepted", len(msgs), len(stored))
	}
	sources := make([][]byte, len(msgs))
	for i, m := range msgs {
		f := stored[i]
		status, src := r.callRaw("GET", fmt.Sprintf("/api/email-messages/%d/raw/", m.ID), key, nil)
		raw, _ := os.ReadFile(f)
		if status != 200 || !bytes.HasSuffix(src, asSent(raw)) || !bytes.HasPrefix(src, []byte("Return-Path: <corpus@example.org>\r\nReceived: ")) {
			t.Errorf("%s: the stored source is not what was sent (%d, %d bytes for %d)", f, status, len(src), len(asSent(raw)))
		}
		sources[i] = src
		// The HTML body, which a received message keeps in its source and
		// the store reads back, is what the parser read from the sender's
		// bytes at receipt, before our trace went on top.
		parsed, err := mailmime.Parser{}.Parse(asSent(raw))
		var one struct {
			HTML string `json:"html"`
		}
		r.call("GET", fmt.Sprintf("/api/email-messages/%d/", m.ID), key, nil, &one)
		if want := core.CleanText(core.StoredBody(parsed.HTML)); err != nil || one.HTML != want {
			t.Errorf("%s: %d bytes of HTML read back, %d parsed at receipt (%v)", filepath.Base(f), len(one.HTML), len(want), err)
		}
		if py := python[f]; py.Clean {
			if strings.Join(strings.Fields(m.Subject), " ") != strings.Join(strings.Fields(py.Subject), " ") {
				t.Errorf("%s: subject %q, Python reads %q", filepath.Base(f), m.Subject, py.Subject)
			}
			if py.From != "" && !strings.EqualFold(m.FromEmail, py.From) {
				t.Errorf("%s: from %q, Python reads %q", filepath.Base(f), m.FromEmail, py.From)
			}
		}
	}

	ic, err := imapclient.DialInsecure(r.svc.IMAPAddr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	if err := ic.Login(inbox, key).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := ic.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	whole := &imap.FetchItemBodySection{Peek: true}
	fetched, err := ic.Fetch(imap.SeqSet{{Start: 1, Stop: 0}}, &imap.FetchOptions{UID: true, RFC822Size: true, Envelope: true,
		BodyStructure: &imap.FetchItemBodyStructure{Extended: true}, BodySection: []*imap.FetchItemBodySection{whole}}).Collect()
	if err != nil || len(fetched) != len(msgs) {
		t.Fatalf("FETCH 1:* (BODYSTRUCTURE ENVELOPE BODY.PEEK[]): %v, %d of %d messages", err, len(fetched), len(msgs))
	}
	sort.Slice(fetched, func(i, j int) bool { return fetched[i].UID < fetched[j].UID })
	for i, m := range fetched {
		body := m.FindBodySection(whole)
		if int64(m.UID) != msgs[i].ID || !bytes.Equal(body, sources[i]) || m.RFC822Size != int64(len(body)) ||
			m.Envelope == nil || m.BodyStructure == nil {
			t.Errorf("%s over IMAP: uid %d, %d bytes (RFC822.SIZE %d) for %d stored", stored[i], m.UID, len(body), m.RFC822Size, len(sources[i]))
		}
	}
	if err := ic.Noop().Wait(); err != nil {
		t.Fatalf("the IMAP session did not survive the corpus: %v", err)
	}
}

// TestMbsyncSync: mbsync (isync), a real IMAP client, copies an inbox into a
// Maildir; every message arrives as stored, and \Seen travels both ways.
func TestMbsyncSync(t *testing.T) {
	t.Parallel()
	mbsync, err := exec.LookPath("mbsync")
	if err != nil {
		missing(t, "mbsync", "apt-get install isync")
	}
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("mbsync@example.com")
	inbox, key := r.agentWithKey(mgmt, "Synced")
	smtpAddr := r.svc.SMTPAddr()
	for i, subject := range []string{"One", "Two", "Three"} {
		sendSMTP(t, smtpAddr, "alice@example.org", []string{inbox}, plainMail(inbox, fmt.Sprintf("sync-%d@example.org", i), subject))
	}
	var pg apiPage
	r.call("GET", "/api/email-messages/", key, nil, &pg)
	if len(pg.Results) != 3 {
		t.Fatalf("%d messages", len(pg.Results))
	}

	dir := t.TempDir()
	maildir := filepath.Join(dir, "mail")
	host, port, _ := strings.Cut(r.svc.IMAPAddr(), ":")
	rc := fmt.Sprintf(`IMAPAccount callsign
Host %s
Port %s
User %s
Pass %s
SSLType None
AuthMechs LOGIN

IMAPStore remote
Account callsign

MaildirStore local
Path %s/
Inbox %s/INBOX

Channel inbox
Far :remote:
Near :local:
Patterns INBOX
Create Near
Sync All
SyncState *
`, host, port, inbox, key, maildir, maildir)
	if err := os.Mkdir(maildir, 0o700); err != nil {
		t.Fatal(err)
	}
	rcFile := filepath.Join(dir, "mbsyncrc")
	if err := os.WriteFile(rcFile, []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	sync := func() {
		t.Helper()
		cmd := exec.Command(mbsync, "-c", rcFile, "-a")
		cmd.Env = append(os.Environ(), "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("mbsync: %v\n%s", err, out)
		}
	}
	local := func() map[string]string { // file name → content
		files := map[string]string{}
		for _, sub := range []string{"new", "cur"} {
			entries, _ := os.ReadDir(filepath.Join(maildir, "INBOX", sub))
			for _, e := range entries {
				b, err := os.ReadFile(filepath.Join(maildir, "INBOX", sub, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				files[filepath.Join(sub, e.Name())] = string(b)
			}
		}
		return files
	}
	seen := func(name string) bool { _, flags, _ := strings.Cut(name, ":2,"); return strings.Contains(flags, "S") }
	fileOf := func(files map[string]string, subject string) string {
		for name, content := range files {
			if strings.Contains(content, "\r\nSubject: "+subject+"\r\n") || strings.Contains(content, "\nSubject: "+subject+"\n") {
				return name
			}
		}
		t.Fatalf("no local copy of %q", subject)
		return ""
	}

	sync()
	files := local()
	if len(files) != 3 {
		t.Fatalf("mbsync copied %d messages: %v", len(files), files)
	}
	for _, m := range pg.Results {
		_, src := r.callRaw("GET", fmt.Sprintf("/api/email-messages/%d/raw/", m.ID), key, nil)
		name := fileOf(files, m.Subject)
		// mbsync keeps mail with LF line ends and marks what it stores with X-TUID.
		got := tuid.ReplaceAllString(files[name], "")
		if got != strings.ReplaceAll(string(src), "\r\n", "\n") {
			t.Errorf("%s arrived changed:\n%q\nstored:\n%q", m.Subject, got, src)
		}
		if seen(name) {
			t.Errorf("%s arrived seen", m.Subject)
		}
	}

	// Read through the API: the local copy becomes seen.
	byID := map[string]int64{}
	for _, m := range pg.Results {
		byID[m.Subject] = m.ID
	}
	if s := r.call("PATCH", fmt.Sprintf("/api/email-messages/%d/", byID["One"]), key, map[string]any{"is_read": true}, nil); s != 200 {
		t.Fatalf("PATCH: %d", s)
	}
	// Read in the mail client: the API shows it read.
	name := fileOf(local(), "Two")
	base := filepath.Base(name)
	if !strings.Contains(base, ":2,") {
		base += ":2,"
	}
	if err := os.Rename(filepath.Join(maildir, "INBOX", name), filepath.Join(maildir, "INBOX", "cur", base+"S")); err != nil {
		t.Fatal(err)
	}
	sync()
	files = local()
	if !seen(fileOf(files, "One")) || !seen(fileOf(files, "Two")) || seen(fileOf(files, "Three")) {
		t.Errorf("local flags after the sync: %v", keys(files))
	}
	for subject, want := range map[string]bool{"One": true, "Two": true, "Three": false} {
		var m struct {
			IsRead bool `json:"is_read"`
		}
		r.call("GET", fmt.Sprintf("/api/email-messages/%d/", byID[subject]), key, nil, &m)
		if m.IsRead != want {
			t.Errorf("%s: is_read %v, want %v", subject, m.IsRead, want)
		}
	}
}

var tuid = regexp.MustCompile(`(?m)^X-TUID: \S+\n`)

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestHTMLOfMailBeginningWithSpace: a sender's first line that begins with
// white space reads as a field at receipt, but continues our trace's last
// field in the stored source; the HTML read back is still the one read at
// receipt.
func TestHTMLOfMailBeginningWithSpace(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			r := start(t, d, nil)
			mgmt := r.bootstrap("space@example.com")
			inbox, key := r.agentWithKey(mgmt, "Space")
			raw := " Content-Type: text/html\r\nSubject: s\r\n\r\n<p>Hello</p>\r\n"
			c, err := smtp.Dial(r.svc.SMTPAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.SendMail("a@example.org", []string{inbox}, strings.NewReader(raw)); err != nil {
				t.Fatal(err)
			}
			var pg apiPage
			r.call("GET", "/api/email-messages/", key, nil, &pg)
			if len(pg.Results) != 1 {
				t.Fatalf("%d messages", len(pg.Results))
			}
			var one struct {
				HTML string `json:"html"`
			}
			r.call("GET", fmt.Sprintf("/api/email-messages/%d/", pg.Results[0].ID), key, nil, &one)
			if one.HTML != "<p>Hello</p>" {
				t.Errorf("HTML read back %q", one.HTML)
			}
		})
	}
}
