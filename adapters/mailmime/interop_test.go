package mailmime

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/emersion/go-message"

	"github.com/callsign/callsign/ports"
)

// RFC 2231 file names: every charset the body decoder knows, and names cut
// into numbered continuations.
func TestParseRFC2231FileNames(t *testing.T) {
	raw := "From: a@example.com\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain\r\n\r\nbody\r\n" +
		"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename*=windows-1252''Caf%E9.pdf\r\n\r\npdf\r\n" +
		"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment;\r\n filename*0*=iso-8859-1''R%E9sum;\r\n filename*1*=%E9%20final;\r\n filename*2=.pdf\r\n\r\npdf\r\n" +
		"--b\r\nContent-Type: application/pdf; name*0=\"long \"; name*1=\"name.pdf\"\r\n\r\npdf\r\n" +
		"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename*=utf-8'en'%E2%82%AC%20report.pdf\r\n\r\npdf\r\n" +
		"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename*=koi8-r''%F0%D2%C9%D7%C5%D4.pdf\r\n\r\npdf\r\n" +
		"--b--\r\n"
	pm, err := Parser{}.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range pm.Attachments {
		names = append(names, a.Filename)
	}
	want := []string{"Café.pdf", "Résumé final.pdf", "long name.pdf", "€ report.pdf", "Привет.pdf"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("names = %q, want %q", names, want)
	}
}

// Where Python's parser reads what enmime gave up on (RFC 2045 §5.2 defaults,
// RFC 2231 parameters on the boundary), so do we.
func TestParseAsPythonDoes(t *testing.T) {
	for _, tc := range []struct {
		name, raw, text string
		attachments     int
	}{
		{"a part without Content-Type is text/plain",
			"From: a@example.com\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nplain words\r\n--b\r\nContent-Type: image/png\r\n\r\npng\r\n--b--\r\n",
			"plain words", 1},
		{"Content-Type: text without a subtype",
			"From: a@example.com\r\nContent-Type: text\r\n\r\nsome text\r\n", "some text", 0},
		{"a part of type text without a subtype",
			"From: a@example.com\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text\r\n\r\nsome text\r\n--b--\r\n",
			"some text", 0},
		{"boundary*= on multipart/signed",
			"From: a@example.com\r\nContent-Type: multipart/signed; protocol=\"application/pgp-signature\"; \r\n\tboundary*=\"ansi-x3.4-1968''sig%2Dboundary\"\r\n\r\n" +
				"--sig-boundary\r\nContent-Type: text/plain\r\n\r\nsigned words\r\n--sig-boundary\r\nContent-Type: application/pgp-signature\r\n\r\nSIG\r\n--sig-boundary--\r\n",
			"signed words", 1},
		{"only empty text parts",
			"From: a@example.com\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n\r\n--b\r\nContent-Type: image/png\r\nContent-Disposition: attachment\r\n\r\npng\r\n--b--\r\n",
			"", 1},
	} {
		pm, err := Parser{}.Parse([]byte(tc.raw))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if pm.Text != tc.text || len(pm.Attachments) != tc.attachments {
			t.Errorf("%s: text %q with %d attachments %+v; want %q with %d", tc.name, pm.Text, len(pm.Attachments), pm.Attachments, tc.text, tc.attachments)
		}
	}
}

// What Postfix and Dovecot store, we store: a header block whose first line
// starts with white space, and a header made of one malformed Content-Type.
func TestParseWhatOtherServersStore(t *testing.T) {
	for raw, want := range map[string]string{
		" From: Ada <ada@example.com>\r\nSubject: indented\r\n\r\nhello\r\n": "hello",
		"Content-Type: text/plain>\r\n\r\nbody after a bad type\r\n":         "body after a bad type",
	} {
		pm, err := Parser{}.Parse([]byte(raw))
		if err != nil || pm.Text != want {
			t.Errorf("Parse(%q): text %q, %v; want %q", raw, pm.Text, err, want)
		}
	}
}

// What mail clients need of composed mail: recipients with names; a reply
// naming a UTF-8 Message-ID; inline images that stay inline beside the HTML
// (multipart/related), attachments beside that.
func TestComposeForMailClients(t *testing.T) {
	m := outgoing()
	m.To = []string{"Bob Example <bob@example.com>", "carol@example.org"}
	m.InReplyTo = "café@example.com"
	raw, err := Composer{}.Compose(m)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := cutHeader(raw)
	if !bytes.Contains(head, []byte("\r\nTo: \"Bob Example\" <bob@example.com>, <carol@example.org>\r\n")) ||
		!bytes.Contains(head, []byte("\r\nIn-Reply-To: <café@example.com>\r\n")) {
		t.Errorf("header:\n%s", head)
	}
	pm, err := Parser{}.Parse(raw)
	if err != nil || pm.Subject != m.Subject || !reflect.DeepEqual(pm.To, []string{"bob@example.com", "carol@example.org"}) {
		t.Fatalf("parsed back: %+v, %v", pm, err)
	}
	related := bytes.Index(raw, []byte("Content-Type: multipart/related;"))
	logo := bytes.Index(raw, []byte("Content-Id: <logo@agents.localhost>"))
	pdf := bytes.Index(raw, []byte("Content-Type: application/pdf"))
	if related < 0 || logo < related || pdf < logo || !bytes.Contains(raw, []byte("Content-Disposition: inline; filename=logo.png")) {
		t.Errorf("the inline image is not beside the HTML in multipart/related:\n%s", raw)
	}
	if a := pm.Attachments[0]; !a.Inline || a.ContentID != "logo@agents.localhost" {
		t.Errorf("parsed back, the image is %+v", a)
	}
}

// Parts the HTML shows (cid:, RFC 2392) sit with it, and only with it, in a
// multipart/related (RFC 2387), whatever their disposition said: the text
// alternative and the attachments stay outside.
func TestComposeRelatedParts(t *testing.T) {
	m := outgoing()
	m.HTML = `<p>Logo <img src="CID:logo@agents.localhost"> and chart <img src="cid:chart@example.org"></p>`
	chart := ports.MailPart{Filename: "chart.png", ContentType: "image/png", ContentID: "chart@example.org", Content: []byte("\x89PNG chart")}
	m.Attachments = append([]ports.MailPart{m.Attachments[0], chart}, m.Attachments[1:]...)
	raw, err := Composer{}.Compose(m)
	if err != nil {
		t.Fatal(err)
	}
	want := "multipart/mixed(multipart/alternative(text/plain multipart/related(text/html image/png:inline image/png:inline))" +
		" application/pdf:attachment text/csv:attachment)"
	if got := mimeShape(t, raw); got != want {
		t.Errorf("shape\n got %s\nwant %s", got, want)
	}
	m.Text = ""
	raw, err = Composer{}.Compose(m)
	if err != nil {
		t.Fatal(err)
	}
	want = "multipart/mixed(multipart/related(text/html image/png:inline image/png:inline) application/pdf:attachment text/csv:attachment)"
	if got := mimeShape(t, raw); got != want {
		t.Errorf("shape without text\n got %s\nwant %s", got, want)
	}
}

// mimeShape writes a message's MIME tree: each leaf's type and disposition,
// each multipart's parts in brackets.
func mimeShape(t *testing.T, raw []byte) string {
	t.Helper()
	e, err := message.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var shape func(e *message.Entity) string
	shape = func(e *message.Entity) string {
		ctype, _, _ := e.Header.ContentType()
		if mr := e.MultipartReader(); mr != nil {
			var parts []string
			for {
				p, err := mr.NextPart()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, shape(p))
			}
			return ctype + "(" + strings.Join(parts, " ") + ")"
		}
		if disp, _, _ := e.Header.ContentDisposition(); disp != "" {
			return ctype + ":" + disp
		}
		return ctype
	}
	return shape(e)
}

// A text part with a file name is an attachment, inline or not, wherever it
// sits: in a multipart/related beside the HTML (as enmime's nestedmulti
// test message has them), or between the body parts of a multipart/mixed
// (as Apple Mail sends a .txt file). Neither is lost nor read as the body.
func TestParseNamedTextParts(t *testing.T) {
	for _, tc := range []struct {
		name, raw, text, html string
		want                  []ports.MailPart
	}{
		{"related", "From: a@example.com\r\nContent-Type: multipart/alternative; boundary=\"alt\"\r\n\r\n" +
			"--alt\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\nThe plain body\r\n" +
			"--alt\r\nContent-Type: multipart/related; boundary=\"rel\"\r\n\r\n" +
			"--rel\r\nContent-Type: text/html; charset=us-ascii\r\n\r\n<p>The HTML body</p>\r\n" +
			"--rel\r\nContent-Disposition: inline; filename=notes.txt\r\nContent-Type: text/plain; name=\"notes.txt\"\r\n\r\nFirst named text\r\n" +
			"--rel\r\nContent-Disposition: inline\r\nContent-Type: text/plain; name=\"more.txt\"\r\n\r\nSecond named text\r\n" +
			"--rel--\r\n--alt--\r\n",
			"The plain body", "<p>The HTML body</p>",
			[]ports.MailPart{{Filename: "notes.txt", ContentType: "text/plain", Inline: true, Content: []byte("First named text")},
				{Filename: "more.txt", ContentType: "text/plain", Inline: true, Content: []byte("Second named text")}}},
		{"mixed", "From: a@example.com\r\nContent-Type: multipart/mixed; boundary=m\r\n\r\n" +
			"--m\r\nContent-Type: text/plain\r\n\r\nBefore the file.\r\n" +
			"--m\r\nContent-Disposition: inline; filename=list.txt\r\nContent-Type: text/plain; name=list.txt\r\n\r\n1. eggs\r\n" +
			"--m\r\nContent-Type: text/html; name=page.html\r\n\r\n<p>a page</p>\r\n" +
			"--m\r\nContent-Type: text/plain\r\n\r\nAfter the file.\r\n--m--\r\n",
			"Before the file.\n--\nAfter the file.", "",
			[]ports.MailPart{{Filename: "list.txt", ContentType: "text/plain", Inline: true, Content: []byte("1. eggs")},
				{Filename: "page.html", ContentType: "text/html", Content: []byte("<p>a page</p>")}}},
	} {
		pm, err := Parser{}.Parse([]byte(tc.raw))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i := range tc.want {
			tc.want[i].Size = len(tc.want[i].Content)
		}
		if pm.Text != tc.text || pm.HTML != tc.html || !reflect.DeepEqual(pm.Attachments, tc.want) {
			t.Errorf("%s: text %q, html %q, attachments %+v", tc.name, pm.Text, pm.HTML, pm.Attachments)
		}
	}
}
