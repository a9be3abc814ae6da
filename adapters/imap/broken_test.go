package imap_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"

	imapadapter "github.com/callsign/callsign/adapters/imap"
)

// brokenMail is mail that SMTP accepts and real senders produce, each of
// which once broke FETCH: a panic that dropped the connection, or an empty
// body and envelope.
var brokenMail = []struct {
	name, raw string
	subject   string // what ENVELOPE must show
	structure string // type/subtype of the top of BODYSTRUCTURE
}{
	{"a multipart nesting its own boundary (Outlook Express)", "From: a@example.org\r\nSubject: nested\r\nContent-Type: multipart/mixed; boundary=\"X\"\r\n\r\n" +
		"--X\r\nContent-Type: multipart/alternative; boundary=\"X\"\r\n\r\n--X\r\nContent-Type: text/plain\r\n\r\nhello\r\n--X--\r\n--X--\r\n",
		"nested", "multipart/mixed"},
	{"a multipart without a boundary", "From: a@example.org\r\nSubject: no boundary\r\nContent-Type: multipart/mixed\r\n\r\nJust text.\r\n",
		"no boundary", "text/plain"},
	{"a bounce whose parts never start", "From: MAILER-DAEMON@example.org\r\nSubject: bounce\r\nContent-Type: multipart/report; boundary=\"b1\"\r\n\r\n" +
		"This is a bounce without any delimiter.\r\n", "bounce", "text/plain"},
	{"an mbox From line first", "From someone@example.org Thu Jan  1 00:00:00 2026\r\nFrom: a@example.org\r\nSubject: mbox\r\n\r\nbody\r\n",
		"mbox", "text/plain"},
	{"no blank line before the body", "From: a@example.org\r\nSubject: run-on\r\nthis line is the body\r\nand this\r\n",
		"run-on", "text/plain"},
	{"a header and nothing else", "From: a@example.org\r\nSubject: header only", "header only", "text/plain"},
	{"a part without Content-Type and a type without subtype", "From: a@example.org\r\nSubject: defaults\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\n\r\nno type here\r\n--b\r\nContent-Type: text\r\n\r\nno subtype\r\n--b--\r\n", "defaults", "multipart/mixed"},
}

func TestFetchServesEveryStoredMessage(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice")
	for _, m := range brokenMail {
		w.deliver(alice.inbox, m.raw)
	}
	c := login(t, w.serve(imapadapter.ServerOptions{PlaintextAuth: true}), alice)
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	whole := &imap.FetchItemBodySection{Peek: true}
	header := &imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, Peek: true}
	first := &imap.FetchItemBodySection{Part: []int{1}, Peek: true}
	for i, m := range brokenMail {
		for _, extended := range []bool{true, false} {
			msgs, err := c.Fetch(imap.SeqSetNum(uint32(i+1)), &imap.FetchOptions{Envelope: true, RFC822Size: true,
				BodyStructure: &imap.FetchItemBodyStructure{Extended: extended},
				BodySection:   []*imap.FetchItemBodySection{whole, header, first}}).Collect()
			if err != nil || len(msgs) != 1 {
				t.Fatalf("%s: FETCH: %v (%d messages)", m.name, err, len(msgs))
			}
			got := msgs[0]
			body := got.FindBodySection(whole)
			if string(body) != m.raw || got.RFC822Size != int64(len(body)) {
				t.Errorf("%s: BODY[] is %q (RFC822.SIZE %d), want the stored bytes", m.name, body, got.RFC822Size)
			}
			if got.Envelope == nil || got.Envelope.Subject != m.subject {
				t.Errorf("%s: ENVELOPE %+v", m.name, got.Envelope)
			}
			if h := got.FindBodySection(header); !bytes.HasSuffix(h, []byte("\r\n\r\n")) || !bytes.Contains(h, []byte("Subject: "+m.subject)) {
				t.Errorf("%s: BODY[HEADER] %q", m.name, h)
			}
			// The nested multipart's first part really is empty; a header has no body.
			if len(got.FindBodySection(first)) == 0 && i != 0 && !strings.HasSuffix(m.name, "nothing else") {
				t.Errorf("%s: BODY[1] is empty", m.name)
			}
			if typ := mediaType(got.BodyStructure); typ != m.structure {
				t.Errorf("%s: BODYSTRUCTURE is %s, want %s", m.name, typ, m.structure)
			}
		}
	}
	// The defaults of RFC 2045 §5.2 show in the structure.
	msgs, err := c.Fetch(imap.SeqSetNum(uint32(len(brokenMail))), &imap.FetchOptions{BodyStructure: &imap.FetchItemBodyStructure{Extended: true}}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	mp := msgs[0].BodyStructure.(*imap.BodyStructureMultiPart)
	for _, child := range mp.Children {
		if typ := mediaType(child); typ != "text/plain" {
			t.Errorf("a part without a usable Content-Type is %s, want text/plain", typ)
		}
	}
	if err := c.Noop().Wait(); err != nil {
		t.Fatalf("the session did not survive: %v", err)
	}
}

func mediaType(bs imap.BodyStructure) string {
	return strings.ToLower(bs.MediaType())
}
