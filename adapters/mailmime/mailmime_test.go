package mailmime

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

const fixtures = "../../testdata/mail"

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// part is what a test expects of one attachment.
type part struct {
	name, ctype, cid string
	inline           bool
	content          string // checked when not empty
}

func TestParseFixtures(t *testing.T) {
	png := string(fixturePNG(t))
	for _, tc := range []struct {
		file       string
		messageID  string
		inReplyTo  string
		references []string
		fromEmail  string
		fromName   string
		to, cc     []string
		subject    string
		date       string // RFC 3339, "" for the zero time
		text       string // exact, or a prefix when textPrefix
		textPrefix bool
		html       string // a substring
		parts      []part
		problems   []string // substrings, one per problem, in order
	}{
		{
			file: "alternative.eml", messageID: "welcome.1234@callsign.example",
			fromEmail: "news@callsign.example", fromName: "Callsign Team",
			to: []string{"ada@agents.localhost"}, subject: "Welcome to the Callsign beta",
			date: "2026-11-21T08:00:00Z",
			text: "Hi Ada,\n\nThanks for joining the Callsign beta. Your agent now has its own inbox, a phone number " +
				"for SMS and voice, and a vault for the passwords it needs. Replies land in the same thread, so your " +
				"agent can follow a conversation from the first message to the last — without losing context.\n\n",
			textPrefix: true,
			html:       `<li><a href="https://callsign.example/docs/4">Send your first message</a></li>`,
		},
		{
			file: "nested.eml", messageID: "invoice-2026-11@navy.example",
			fromEmail: "grace@navy.example", fromName: "Grace Hopper",
			to: []string{"ada@agents.localhost", "bob@example.com"}, cc: []string{"carol@example.org"},
			subject: "Invoice 2026-11 with logo", date: "2026-11-20T17:45:12-05:00",
			text: "Please find the invoice attached.",
			html: `<img src="cid:logo@navy.example" alt="logo">`,
			parts: []part{
				{name: "logo.png", ctype: "image/png", cid: "logo@navy.example", inline: true, content: png},
				{name: "invoice-2026-11.pdf", ctype: "application/pdf", content: "%PDF-1.4\n"},
			},
		},
		{
			file: "latin1-qp.eml", messageID: "latin1@example.de",
			fromEmail: "francois@example.de", fromName: "François Müller",
			to: []string{"ada@agents.localhost"}, subject: "Grüße aus Köln", date: "2026-11-19T09:30:00+01:00",
			text: "Grüße aus Köln!\nDas Café am Straßenrand öffnet um 9 Uhr; Preis: 5 EUR? Nein: 5 £.\nÀ bientôt, François",
		},
		{
			file: "shift-jis.eml", messageID: "sjis-0001@example.jp",
			fromEmail: "yamada@example.jp", fromName: "山田太郎",
			to: []string{"ada@agents.localhost"}, subject: "会議の時間変更", date: "2026-11-18T10:00:00+09:00",
			text: "山田です。\n明日の会議は午後三時からに変更になりました。\nよろしくお願いいたします。",
		},
		{
			file: "encoded-headers.eml", messageID: "encoded@example.se",
			fromEmail: "zoe@example.se", fromName: "Zoë Åström",
			to: []string{"andre@example.be", "ada@agents.localhost"}, subject: "Résumé für Zoë — 日本",
			date: "2026-11-17T12:00:00Z", text: "Encoded headers only; the body is plain ASCII.",
		},
		{
			file: "broken-boundary.eml", messageID: "broken-boundary@example.net",
			fromEmail: "broken@example.net", fromName: "Broken Mailer",
			to: []string{"ada@agents.localhost"}, subject: "Truncated multipart", date: "2026-11-16T08:00:00Z",
			text:     "The first part survives.",
			parts:    []part{{name: "report.csv", ctype: "text/csv", content: "id,value\r\n1,42\r\n"}},
			problems: []string{`Missing Boundary: Boundary "never-closed" was not closed correctly`},
		},
		{
			file: "unknown-charset.eml", messageID: "unknown-charset@example.net",
			fromEmail: "odd@example.net", fromName: "Odd Sender",
			to: []string{"ada@agents.localhost"}, subject: "Unknown charset", date: "2026-11-15T08:00:00Z",
			text: "Plain words survive; the price is 10€ and that is “fine”.",
			problems: []string{
				`Character Set Conversion: failed to get reader for charset "x-unknown"`,
				`charset "x-unknown") is not valid UTF-8`,
			},
		},
		{
			file: "missing-headers.eml", to: []string{"ada@agents.localhost"},
			subject: "No sender, no id, no date", text: "Someone forgot the headers.",
			problems: []string{"missing From header", "missing Date header"},
		},
		{
			file: "8bit-utf8.eml", messageID: "8bit@example.de",
			fromEmail: "juergen@example.de", fromName: "Jürgen",
			to: []string{"ada@agents.localhost"}, subject: "8bit body ✓", date: "2026-11-14T08:00:00Z",
			text: "Grüße, 你好, привет, 🚀 — sent as raw 8-bit UTF-8.",
		},
		{
			file: "reply.eml", messageID: "reply-3@example.com", inReplyTo: "msg-2@agents.localhost",
			references: []string{"msg-1@example.com", "msg-1b@example.com", "msg-2@agents.localhost"},
			fromEmail:  "bob@example.com", fromName: "Bob",
			to: []string{"ada@agents.localhost"}, subject: "Re: Lunch?", date: "2026-11-13T12:30:00-08:00",
			text: "Sounds good, see you at noon.\n\n> Lunch tomorrow?",
		},
		{
			file: "plain.eml", messageID: "199611120800.AA01234@old.example.org",
			fromEmail: "sysadmin@old.example.org", fromName: "The Sysadmin",
			to: []string{"ada@agents.localhost"}, subject: "Disk usage report",
			date: "2026-11-12T08:00:00-05:00", // EST, an obsolete zone name
			text: "/dev/sda1   93% used\n\n-- \ncron",
		},
		{
			file: "bare-lf.eml", messageID: "bare-lf@example.net",
			fromEmail: "tool@example.net", fromName: "Unix Tool",
			to: []string{"ada@agents.localhost"}, subject: "Bare LF line endings", date: "2026-11-11T08:00:00Z",
			text: "Line one.\nLine two.", html: "<p>Line one.<br>Line two.</p>",
		},
		{
			file: "html-only.eml", messageID: "html-only@shop.example",
			fromEmail: "promo@shop.example", fromName: "Marketing",
			to: []string{"ada@agents.localhost"}, subject: "HTML only", date: "2026-11-10T08:00:00Z",
			text: "********\nBig sale\n********\n\nEverything must go — today only.",
			html: "<h1>Big sale</h1>", problems: []string{"Plain Text from HTML"},
		},
		{
			file: "malformed-to.eml", messageID: "malformed-to@example.net",
			fromEmail: "sloppy@example.net", fromName: "Sloppy",
			to: []string{"ada@agents.localhost", "bob@example.com", "carol@example.org"},
			cc: []string{"dave@example.net"}, subject: "Malformed To", date: "2026-11-09T08:00:00Z",
			text: "The body is intact.", problems: []string{"To header partly unreadable"},
		},
		{
			file: "windows-1252.eml", messageID: "cp1252@corp.example",
			fromEmail: "user@corp.example", fromName: "Outlook User",
			to: []string{"ada@agents.localhost"}, subject: "Smart quotes", date: "2026-11-08T08:00:00Z",
			text: "“Quoted” – it costs €10.", html: "<p>“Quoted” – it costs €10.</p>",
			parts:    []part{{name: "attachment-1.bin", ctype: "application/octet-stream", content: "\x00\x01\x02\x03"}},
			problems: []string{"Plain Text from HTML"},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			pm, err := Parser{}.Parse(fixture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			check := func(field string, got, want any) {
				t.Helper()
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", field, got, want)
				}
			}
			check("MessageID", pm.MessageID, tc.messageID)
			check("InReplyTo", pm.InReplyTo, tc.inReplyTo)
			check("References", pm.References, tc.references)
			check("FromEmail", pm.FromEmail, tc.fromEmail)
			check("FromName", pm.FromName, tc.fromName)
			check("To", pm.To, tc.to)
			check("Cc", pm.Cc, tc.cc)
			check("Subject", pm.Subject, tc.subject)
			if tc.date == "" {
				check("Date", pm.Date, time.Time{})
			} else {
				check("Date", pm.Date.Format(time.RFC3339), tc.date)
			}
			if tc.textPrefix {
				if !strings.HasPrefix(pm.Text, tc.text) {
					t.Errorf("Text = %q, want it to start with %q", pm.Text, tc.text)
				}
			} else {
				check("Text", pm.Text, tc.text)
			}
			if tc.html == "" {
				check("HTML", pm.HTML, "")
			} else if !strings.Contains(pm.HTML, tc.html) {
				t.Errorf("HTML = %q, want it to contain %q", pm.HTML, tc.html)
			}
			if len(pm.Attachments) != len(tc.parts) {
				t.Fatalf("%d attachments %+v, want %d", len(pm.Attachments), pm.Attachments, len(tc.parts))
			}
			for i, want := range tc.parts {
				got := pm.Attachments[i]
				check(fmt.Sprintf("attachment %d", i), []any{got.Filename, got.ContentType, got.ContentID, got.Inline},
					[]any{want.name, want.ctype, want.cid, want.inline})
				if !strings.HasPrefix(string(got.Content), want.content) {
					t.Errorf("attachment %d content = %q, want it to start with %q", i, got.Content, want.content)
				}
			}
			if len(pm.Problems) != len(tc.problems) {
				t.Fatalf("problems = %q, want %d matching %q", pm.Problems, len(tc.problems), tc.problems)
			}
			for i, want := range tc.problems {
				if !strings.Contains(pm.Problems[i], want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, pm.Problems[i], want)
				}
			}
		})
	}
}

func fixturePNG(t *testing.T) []byte {
	t.Helper()
	// The logo in nested.eml, a 4×4 PNG.
	raw := fixture(t, "nested.eml")
	start := bytes.Index(raw, []byte("iVBOR"))
	end := bytes.Index(raw[start:], []byte("\r\n--"))
	var b64 strings.Builder
	b64.Write(bytes.ReplaceAll(raw[start:start+end], []byte("\r\n"), nil))
	pm, err := Parser{}.Parse([]byte("Content-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64.String()))
	if err != nil || len(pm.Attachments) != 1 || !bytes.HasPrefix(pm.Attachments[0].Content, []byte("\x89PNG\r\n")) {
		t.Fatalf("cannot read the logo: %v %+v", err, pm.Attachments)
	}
	return pm.Attachments[0].Content
}

// TestParseUnreadable pins down the one failure: no header field at all.
func TestParseUnreadable(t *testing.T) {
	for _, raw := range []string{
		"",
		"   \r\n",
		"\r\nFrom: a@example.com\r\n\r\nbody", // an empty header, then a body
		"hello world",
		"Dear Ada,\r\nSubject: hi\r\n\r\nbody", // prose before the fields
		"\x00\x01\x02:\x03\xff",
	} {
		pm, err := Parser{}.Parse([]byte(raw))
		if core.KindOf(err) != core.KindInvalid {
			t.Errorf("Parse(%q) = %+v, %v; want a KindInvalid error", raw, pm, err)
		}
	}
	// One field is enough, even without a body or a blank line.
	for _, raw := range []string{"Subject: only a subject", "X-Anything: 1\n\n", "Subject: hi\r\n\r\n\xff\xfe binary body"} {
		if _, err := (Parser{}).Parse([]byte(raw)); err != nil {
			t.Errorf("Parse(%q): %v", raw, err)
		}
	}
}

// A Content-Type Go cannot parse (a comment after the type) stops enmime;
// the header and the body are still read.
func TestParseSalvagesBadContentType(t *testing.T) {
	raw := "From: Old <old@example.com>\r\nSubject: =?utf-8?q?Caf=C3=A9?=\r\nDate: Mon, 2 Nov 2026 10:00:00 +0000\r\n" +
		"Content-Type: text/plain (generated by OldMailer 1.0)\r\n\r\nHello\r\nthere\r\n"
	pm, err := Parser{}.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if pm.FromEmail != "old@example.com" || pm.Subject != "Café" || pm.Text != "Hello\nthere" || pm.Date.IsZero() {
		t.Errorf("got %+v", pm)
	}
	if len(pm.Problems) != 1 || !strings.Contains(pm.Problems[0], "MIME structure unreadable") {
		t.Errorf("problems = %q", pm.Problems)
	}
}

func TestParseKeepsLastReferences(t *testing.T) {
	var refs []string
	for i := range 60 {
		refs = append(refs, fmt.Sprintf("<m%d@example.com>", i))
	}
	raw := "From: a@example.com\r\nReferences: " + strings.Join(refs, "\r\n ") +
		"\r\nIn-Reply-To: <m59@example.com> (Bob's message)\r\nMessage-ID: m60@example.com\r\n\r\nx"
	pm, err := Parser{}.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(pm.References) != MaxReferences || pm.References[0] != "m10@example.com" || pm.References[49] != "m59@example.com" {
		t.Errorf("References = %q", pm.References)
	}
	if pm.InReplyTo != "m59@example.com" || pm.MessageID != "m60@example.com" {
		t.Errorf("InReplyTo = %q, MessageID = %q", pm.InReplyTo, pm.MessageID)
	}
	// Ids run together or folded inside the brackets still come apart.
	pm, _ = Parser{}.Parse([]byte("References: <a@x><b@x>,<c\r\n @x>\r\n\r\n"))
	if !reflect.DeepEqual(pm.References, []string{"a@x", "b@x", "c@x"}) {
		t.Errorf("References = %q", pm.References)
	}
}

func TestParseAttachmentNames(t *testing.T) {
	raw := "From: a@example.com\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain\r\n\r\nbody\r\n" +
		"--b\r\nContent-Type: image/png\r\nContent-Disposition: attachment\r\n\r\npng\r\n" +
		"--b\r\nContent-Type: application/x-callsign-unknown\r\nContent-Disposition: attachment\r\n\r\n?\r\n" +
		"--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=\"../../etc/passwd\"\r\n\r\nroot\r\n" +
		"--b\r\nContent-Type: application/pdf; name=\"C:\\\\Users\\\\ada\\\\r\xc3\xa9sum\xc3\xa9.pdf\"\r\n\r\npdf\r\n" +
		"--b--\r\n"
	pm, err := Parser{}.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range pm.Attachments {
		names = append(names, a.Filename)
	}
	want := []string{"attachment-1.png", "attachment-2.bin", "passwd", "résumé.pdf"}
	if !reflect.DeepEqual(names, want) || pm.Text != "body" {
		t.Errorf("names = %q, text = %q; want %q", names, pm.Text, want)
	}
}

// Mail without MIME headers, or declaring US-ASCII, that carries 8-bit
// UTF-8 is read as UTF-8; other 8-bit bytes as Windows-1252.
func TestParseUndeclaredCharset(t *testing.T) {
	for raw, want := range map[string]string{
		"From: a@example.com\r\n\r\nGrüße 🚀\r\n":                                                                  "Grüße 🚀",
		"From: a@example.com\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\nGrüße\r\n": "Grüße",
		"From: a@example.com\r\n\r\nGr\xfc\xdfe \x93x\x94\r\n":                                                    "Grüße “x”",
	} {
		pm, err := Parser{}.Parse([]byte(raw))
		if err != nil || pm.Text != want {
			t.Errorf("Parse(%q) text = %q, %v; want %q", raw, pm.Text, err, want)
		}
	}
}

func TestParseDate(t *testing.T) {
	for in, want := range map[string]string{
		"Mon, 02 Nov 2026 15:04:05 -0700":                 "2026-11-02T15:04:05-07:00",
		"2 Nov 2026 15:04 +0100":                          "2026-11-02T15:04:00+01:00",
		"Mon,  2 Nov 2026 15:04:05 +0000 (UTC)":           "2026-11-02T15:04:05Z",
		"Mon, 2 Nov 2026 15:04:05 PDT":                    "2026-11-02T15:04:05-07:00",
		"Mon, 2 Nov 2026 15:04:05":                        "2026-11-02T15:04:05Z",
		"Monday, 2 November 2026 15:04:05 +0200":          "2026-11-02T15:04:05+02:00",
		"Mon Nov  2 15:04:05 2026":                        "2026-11-02T15:04:05Z",
		"2026-11-02T15:04:05+09:00":                       "2026-11-02T15:04:05+09:00",
		"2026-11-02 15:04:05 -0300":                       "2026-11-02T15:04:05-03:00",
		"\tMon, 2 Nov 2026\r\n 15:04:05 +0000":            "2026-11-02T15:04:05Z",
		"Mon, 2 Nov 2026 15:04:05 +0000 (Coordinated UT)": "2026-11-02T15:04:05Z",
	} {
		d, ok := parseDate(in)
		if !ok || d.Format(time.RFC3339) != want {
			t.Errorf("parseDate(%q) = %v, %v; want %s", in, d, ok, want)
		}
	}
	for _, in := range []string{"", "yesterday", "32 Nov 2026 10:00:00 +0000"} {
		if d, ok := parseDate(in); ok {
			t.Errorf("parseDate(%q) = %v", in, d)
		}
	}
	pm, _ := Parser{}.Parse([]byte("From: a@example.com\r\nDate: soon\r\n\r\nx"))
	if !pm.Date.IsZero() || len(pm.Problems) != 1 || !strings.Contains(pm.Problems[0], `unreadable Date header "soon"`) {
		t.Errorf("Date = %v, problems = %q", pm.Date, pm.Problems)
	}
}

// cutParts must read mail exactly as enmime's own multipart reader does.
func TestCutMatchesEnmime(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixtures, "*.eml"))
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	inputs := map[string][]byte{
		"empty part":       []byte("Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--"),
		"longer boundary":  []byte("Content-Type: multipart/mixed; boundary=b\r\n\r\npreamble\r\n--b\r\nContent-Type: text/plain\r\n\r\n--bb\r\n-- b\r\n--b\t\r\nContent-Type: text/html\r\n\r\n<p>x</p>\r\n--b--\r\nepilogue"),
		"blank lines":      []byte("Content-Type: multipart/alternative; boundary=\"q\"\n\n--q\nContent-Type: text/plain\n\n\nx\n\n\n--q--\n"),
		"no close, nested": []byte("Content-Type: multipart/mixed; boundary=o\r\n\r\n--o\r\nContent-Type: multipart/alternative; boundary=i\r\n\r\n--i\r\nContent-Type: text/plain; charset=iso-8859-1\r\n\r\n\xe9t\xe9\r\n--i\r\nContent-Type: text/html\r\n\r\n<b>x</b>\r\n--i--\r\n--o\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment\r\n\r\n%PDF"),
	}
	for _, f := range files {
		inputs[filepath.Base(f)] = fixture(t, filepath.Base(f))
	}
	for name, raw := range inputs {
		fast, ok := cutParts(raw, "0", 0, nil)
		if !ok {
			if bytes.Contains(raw, []byte("multipart/")) {
				t.Errorf("%s: cutParts declined", name)
			}
			continue
		}
		slow, err := parser.ReadParts(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fastEnv, fastProblems, err1 := envelope(fast)
		slowEnv, slowProblems, err2 := envelope(slow)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v, %v", name, err1, err2)
		}
		got, want := build(fastEnv, fastProblems, nil), build(slowEnv, slowProblems, nil)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n cut    %+v\n enmime %+v", name, got, want)
		}
	}
}

// Deep nesting is quadratic in enmime's multipart reader; it must not reach it.
func TestParseDeepNesting(t *testing.T) {
	var b strings.Builder
	b.WriteString("From: a@example.com\r\nSubject: deep\r\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=a%d\r\n\r\n--a%d\r\n", i, i)
	}
	b.WriteString("Content-Type: text/plain\r\n\r\nhi\r\n")
	pm, err := Parser{}.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if pm.Subject != "deep" || len(pm.Problems) != 2 || !strings.Contains(pm.Problems[0], "multipart structure too large") {
		t.Errorf("subject %q, problems %q", pm.Subject, pm.Problems)
	}
}

func outgoing() ports.OutgoingMail {
	return ports.OutgoingMail{
		Header: core.Header{
			FromEmail: "ada@agents.localhost", FromName: "Ada Lovelace — Zoë",
			To: []string{"bob@example.com", "carol@example.org"}, Cc: []string{"dave@example.net"},
			Subject:    "Grüße: the plan, ünïcödé and a long subject that needs folding across more than one header line",
			MessageID:  "out-1@agents.localhost",
			InReplyTo:  "msg-2@example.com",
			References: []string{"msg-1@example.com", "msg-2@example.com"},
		},
		Text: "Hello Bob,\n\nsee the attached plan. A long line " + strings.Repeat("abcdefghij", 12) + "\n—Ada\n",
		HTML: `<p>Hello Bob,</p><p>see the <b>attached</b> plan.</p><img src="cid:logo@agents.localhost">`,
		Date: time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC),
		Attachments: []ports.MailPart{
			// Inline parts the HTML refers to come first: they sit with it in multipart/related.
			{Filename: "logo.png", ContentType: "image/png", ContentID: "logo@agents.localhost", Inline: true, Content: []byte("\x89PNG\r\n\x1a\n")},
			{Filename: "Übersicht 2026.pdf", ContentType: "application/pdf", Content: []byte("%PDF-1.4\n\x00\xff binary")},
			{ContentType: "text/csv", Content: []byte("a,b\n1,2\n")},
		},
	}
}

func checkCRLF(t *testing.T, raw []byte) {
	t.Helper()
	for i, line := range bytes.Split(raw, []byte("\r\n")) {
		if bytes.ContainsAny(line, "\r\n") || len(line) > 998 {
			t.Fatalf("line %d is not a CRLF line of at most 998 bytes: %q", i, line)
		}
	}
}

func TestComposeRoundTrip(t *testing.T) {
	m := outgoing()
	raw, err := Composer{}.Compose(m)
	if err != nil {
		t.Fatal(err)
	}
	checkCRLF(t, raw)
	head, _ := cutHeader(raw)
	for _, want := range []string{
		"\r\nMime-Version: 1.0\r\n", "\r\nContent-Type: multipart/mixed;",
		"\r\nDate: Sat, 21 Nov 2026 08:00:00 +0000\r\n", "\r\nMessage-Id: <out-1@agents.localhost>\r\n",
		"\r\nIn-Reply-To: <msg-2@example.com>\r\n", "\r\nReferences: <msg-1@example.com> <msg-2@example.com>\r\n",
		"\r\nSubject: =?utf-8?q?", "\r\nFrom: Ada Lovelace =?utf-8?q?=E2=80=94_Zo=C3=AB?= <ada@agents.localhost>\r\n", "\r\nCc: <dave@example.net>\r\n",
	} {
		if !bytes.Contains(append([]byte("\r\n"), head...), []byte(want)) {
			t.Errorf("header lacks %q:\n%s", want, head)
		}
	}
	// "bcc" can occur in the random hex boundary; a Bcc field cannot occur.
	if bytes.Contains(bytes.ToLower(append([]byte("\r\n"), head...)), []byte("\r\nbcc:")) || !utf8.Valid(raw) || bytes.ContainsFunc(raw, func(r rune) bool { return r > 0x7e }) {
		t.Errorf("message has a Bcc or raw 8-bit bytes:\n%s", raw)
	}

	pm, err := Parser{}.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(pm.Problems) != 0 {
		t.Errorf("problems: %q", pm.Problems)
	}
	got := ports.OutgoingMail{Header: pm.Header, Date: pm.Date.UTC(), Text: pm.Text, HTML: pm.HTML, Attachments: pm.Attachments}
	m.Attachments[2].Filename = "attachment-3.csv" // made up for the nameless part
	for i := range m.Attachments {
		m.Attachments[i].Size = len(m.Attachments[i].Content) // what parsing counts
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, m)
	}
}

func TestComposeShapes(t *testing.T) {
	m := outgoing()
	m.Attachments, m.HTML, m.InReplyTo, m.References = nil, "", "", nil
	raw, err := Composer{}.Compose(m)
	if err != nil {
		t.Fatal(err)
	}
	checkCRLF(t, raw)
	for _, want := range []string{"Content-Type: text/plain; charset=utf-8\r\n", "Content-Transfer-Encoding: quoted-printable\r\n"} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("text-only message lacks %q", want)
		}
	}
	if bytes.Contains(raw, []byte("multipart")) || bytes.Contains(raw, []byte("In-Reply-To")) || bytes.Contains(raw, []byte("References")) {
		t.Errorf("text-only message:\n%s", raw)
	}

	m.HTML = "<p>hi</p>"
	raw, err = Composer{}.Compose(m)
	if err != nil {
		t.Fatal(err)
	}
	checkCRLF(t, raw)
	if !bytes.Contains(raw, []byte("Content-Type: multipart/alternative;")) || bytes.Count(raw, []byte("quoted-printable")) != 2 {
		t.Errorf("alternative message:\n%s", raw)
	}
	pm, err := Parser{}.Parse(raw)
	if err != nil || pm.HTML != "<p>hi</p>" || pm.Text != m.Text || len(pm.Attachments) != 0 {
		t.Errorf("parsed back: %+v, %v", pm, err)
	}

	m.Text = ""
	raw, _ = Composer{}.Compose(m)
	if !bytes.Contains(raw, []byte("Content-Type: text/html; charset=utf-8\r\n")) || bytes.Contains(raw, []byte("multipart")) {
		t.Errorf("HTML-only message:\n%s", raw)
	}
}

func TestComposeRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		field  string
		change func(*ports.OutgoingMail)
	}{
		"subject CRLF":          {"subject", func(m *ports.OutgoingMail) { m.Subject = "hi\r\nBcc: eve@example.com" }},
		"subject LF":            {"subject", func(m *ports.OutgoingMail) { m.Subject = "hi\nX: y" }},
		"from name CR":          {"from_name", func(m *ports.OutgoingMail) { m.FromName = "Ada\rBcc: eve@example.com" }},
		"from with name":        {"from_email", func(m *ports.OutgoingMail) { m.FromEmail = "Ada <ada@agents.localhost>" }},
		"from injection":        {"from_email", func(m *ports.OutgoingMail) { m.FromEmail = "ada@agents.localhost\r\nBcc: eve@example.com" }},
		"to with two names":     {"to", func(m *ports.OutgoingMail) { m.To = []string{"Bob <bob@example.com>, Eve <eve@example.com>"} }},
		"to list":               {"to", func(m *ports.OutgoingMail) { m.To = []string{"bob@example.com, eve@example.com"} }},
		"to injection":          {"to", func(m *ports.OutgoingMail) { m.To = []string{"bob@example.com\nBcc: eve@example.com"} }},
		"cc not an address":     {"cc", func(m *ports.OutgoingMail) { m.Cc = []string{"dave"} }},
		"message id CRLF":       {"message_id", func(m *ports.OutgoingMail) { m.MessageID = "x@y\r\nBcc: eve@example.com" }},
		"message id <>":         {"message_id", func(m *ports.OutgoingMail) { m.MessageID = "<x@y>" }},
		"in-reply-to space":     {"in_reply_to", func(m *ports.OutgoingMail) { m.InReplyTo = "a b@c" }},
		"references LF":         {"references", func(m *ports.OutgoingMail) { m.References = []string{"a@b", "c@d\nX: y"} }},
		"references empty":      {"references", func(m *ports.OutgoingMail) { m.References = []string{""} }},
		"filename CRLF":         {"attachments", func(m *ports.OutgoingMail) { m.Attachments[1].Filename = "a.pdf\r\nX: y" }},
		"content id LF":         {"attachments", func(m *ports.OutgoingMail) { m.Attachments[0].ContentID = "a@b\nX: y" }},
		"content type LF":       {"attachments", func(m *ports.OutgoingMail) { m.Attachments[1].ContentType = "text/plain\r\nX: y" }},
		"content type bad":      {"attachments", func(m *ports.OutgoingMail) { m.Attachments[1].ContentType = "not a type" }},
		"in-reply-to not UTF-8": {"in_reply_to", func(m *ports.OutgoingMail) { m.InReplyTo = "caf\xe9@example.com" }},
		"zero date":             {"date", func(m *ports.OutgoingMail) { m.Date = time.Time{} }},
	} {
		m := outgoing()
		tc.change(&m)
		raw, err := Composer{}.Compose(m)
		var e *core.Error
		if !errors.As(err, &e) || e.Kind != core.KindInvalid || len(e.Fields[tc.field]) == 0 {
			t.Errorf("%s: Compose = %q, %v; want KindInvalid on %s", name, raw, err, tc.field)
		}
	}
}

// FuzzParse: Parse never panics, fails only with KindInvalid, and a nil
// error comes with a ParsedMail every caller can use as is.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(fixtures, "*.eml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		pm, err := Parser{}.Parse(raw)
		if err != nil {
			if core.KindOf(err) != core.KindInvalid || !reflect.DeepEqual(pm, ports.ParsedMail{}) {
				t.Fatalf("error %v with %+v", err, pm)
			}
			return
		}
		strs := []string{pm.MessageID, pm.InReplyTo, pm.FromEmail, pm.FromName, pm.Subject, pm.Text, pm.HTML}
		strs = append(append(append(append(strs, pm.References...), pm.To...), pm.Cc...), pm.Problems...)
		for _, a := range pm.Attachments {
			if a.Filename == "" || a.ContentType == "" || strings.ContainsAny(a.Filename, "/\\\x00") {
				t.Fatalf("attachment %+v", a)
			}
			strs = append(strs, a.Filename, a.ContentType, a.ContentID)
		}
		for _, s := range strs {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8: %q", s)
			}
		}
		for _, id := range append([]string{pm.MessageID, pm.InReplyTo}, pm.References...) {
			if strings.ContainsAny(id, "<> \t\r\n") {
				t.Fatalf("identifier %q", id)
			}
		}
		for _, id := range pm.References {
			if id == "" {
				t.Fatalf("empty reference in %q", pm.References)
			}
		}
		if len(pm.References) > MaxReferences || strings.Contains(pm.Text, "\r\n") || strings.Contains(pm.HTML, "\r\n") {
			t.Fatalf("references %d, text %q, html %q", len(pm.References), pm.Text, pm.HTML)
		}
	})
}

// withAttachment is alternative.eml with data attached in base64.
func withAttachment(tb testing.TB, data []byte) []byte {
	alt := fixture(tb, "alternative.eml")
	head, body := cutHeader(alt)
	head = bytes.Replace(head, []byte("Content-Type: multipart/alternative; boundary=\"b1_alt_0001\""),
		[]byte("Content-Type: multipart/mixed; boundary=\"mixed-0001\""), 1)
	var buf bytes.Buffer
	buf.Write(head)
	buf.WriteString("--mixed-0001\r\nContent-Type: multipart/alternative; boundary=\"b1_alt_0001\"\r\n\r\n")
	buf.Write(body)
	buf.WriteString("\r\n--mixed-0001\r\nContent-Type: application/octet-stream; name=\"data.bin\"\r\n" +
		"Content-Disposition: attachment; filename=\"data.bin\"\r\nContent-Transfer-Encoding: base64\r\n\r\n")
	enc := []byte(base64.StdEncoding.EncodeToString(data))
	for len(enc) > 76 {
		buf.Write(enc[:76])
		buf.WriteString("\r\n")
		enc = enc[76:]
	}
	buf.Write(enc)
	buf.WriteString("\r\n--mixed-0001--\r\n")
	return buf.Bytes()
}

// attachmentBytes is size bytes to attach, not all text.
func attachmentBytes(size int) []byte {
	return bytes.Repeat([]byte("Callsign benchmark attachment bytes\x00\x01\xfe\xff"), size/40)
}

// TestALargeAttachmentIsDecodedOnce: parsing a message holds its
// attachment's decoded bytes once; enmime's reading them again, into
// buffers grown as it went, allocated three times their size, which fifty
// 20 MB messages received at once felt.
func TestALargeAttachmentIsDecodedOnce(t *testing.T) {
	data := attachmentBytes(4 << 20)
	raw := withAttachment(t, data)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	pm, err := Parser{}.Parse(raw)
	runtime.ReadMemStats(&after)
	if err != nil || len(pm.Attachments) != 1 || !bytes.Equal(pm.Attachments[0].Content, data) {
		t.Fatalf("parsed %d attachments, %v", len(pm.Attachments), err)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > uint64(len(data))*3/2 {
		t.Errorf("parsing allocated %d bytes for an attachment of %d", allocated, len(data))
	}
}

// TestDescribeIsParseWithoutTheBytesOfFiles: Describe reads a message as
// Parse does, but for the content of the parts that are not text, of which
// it keeps the size; a large attachment is checked without being held.
func TestDescribeIsParseWithoutTheBytesOfFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixtures, "*.eml"))
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	data := attachmentBytes(4 << 20)
	inputs := map[string][]byte{"large attachment": withAttachment(t, data),
		"broken base64": []byte("Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b\r\n" +
			"Content-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n\r\niVBO!!w0KGgo=\r\n--b--\r\n")}
	for _, f := range files {
		inputs[filepath.Base(f)] = fixture(t, filepath.Base(f))
	}
	for name, raw := range inputs {
		want, err1 := Parser{}.Parse(raw)
		got, err2 := Parser{}.Describe(raw)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v, %v", name, err1, err2)
		}
		for i, p := range want.Attachments {
			if p.Size != len(p.Content) {
				t.Errorf("%s: Parse gave part %d size %d for %d bytes", name, i, p.Size, len(p.Content))
			}
			if !strings.HasPrefix(p.ContentType, "text/") && i < len(got.Attachments) && got.Attachments[i].Content == nil {
				want.Attachments[i].Content = nil
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n Describe %+v\n Parse    %+v", name, got, want)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	pm, err := Parser{}.Describe(inputs["large attachment"])
	runtime.ReadMemStats(&after)
	if err != nil || len(pm.Attachments) != 1 || pm.Attachments[0].Content != nil || pm.Attachments[0].Size != len(data) {
		t.Fatalf("described %+v, %v", pm.Attachments, err)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > uint64(len(data))/4 {
		t.Errorf("describing allocated %d bytes for an attachment of %d", allocated, len(data))
	}
}

func BenchmarkParse(b *testing.B) {
	for name, raw := range map[string][]byte{"alternative-5KB": fixture(b, "alternative.eml"), "attachment-20KiB": withAttachment(b, attachmentBytes(20<<10))} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := (Parser{}).Parse(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCompose(b *testing.B) {
	m := outgoing()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Composer{}).Compose(m); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBodiesReadBackAsWritten: a body reads back as its sender wrote it,
// composed here or sent by any SMTP client (which ends the last line with
// CRLF): no line break is added at the end, and blank lines written stay.
func TestBodiesReadBackAsWritten(t *testing.T) {
	for _, body := range []string{"hello", "hello\nworld", "ends with a line break\n", "two blank lines\n\n\n", "=3D and a long line " + strings.Repeat("x", 200)} {
		for _, html := range []string{"", "<p>" + body + "</p>"} {
			m := outgoing()
			m.Text, m.HTML, m.Attachments = body, html, nil
			raw, err := Composer{}.Compose(m)
			if err != nil {
				t.Fatal(err)
			}
			pm, err := Parser{}.Parse(raw)
			if err != nil || pm.Text != body || pm.HTML != html {
				t.Errorf("composed %q / %q read back as %q / %q, %v", body, html, pm.Text, pm.HTML, err)
			}
		}
		// As an SMTP client sends it: every line, the last one too, ends with CRLF.
		sent := "From: a@example.com\r\nSubject: s\r\n\r\n" + strings.ReplaceAll(body, "\n", "\r\n") + "\r\n"
		if pm, err := (Parser{}).Parse([]byte(sent)); err != nil || pm.Text != body {
			t.Errorf("sent %q read back as %q, %v", body, pm.Text, err)
		}
	}
}
