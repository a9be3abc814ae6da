package mailmime_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/callsign/callsign/adapters/mailmime"
	"github.com/callsign/callsign/core"
)

// The verification corpus: mail (.eml) and SMS (.sms: a "From:" line, a
// blank line, the body) written after the shapes well-known services use,
// each with its expected code and link in manifest.json. Mail goes through
// this parser, as it will at ingest.
const verificationCorpus = "../../testdata/verification"

type corpusEntry struct {
	File string `json:"file"`
	Lang string `json:"lang"`
	Code string `json:"code"`
	Link string `json:"link"`
	Note string `json:"note"`
}

func readCorpus(t testing.TB) []corpusEntry {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(verificationCorpus, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var entries []corpusEntry
	if err := json.Unmarshal(raw, &entries); err != nil {
		t.Fatal(err)
	}
	return entries
}

// receivedText reads one corpus message into what the rule examines.
func receivedText(t testing.TB, file string) core.ReceivedText {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(verificationCorpus, file))
	if err != nil {
		t.Fatal(err)
	}
	switch filepath.Ext(file) {
	case ".eml":
		pm, err := mailmime.Parser{}.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return core.ReceivedText{From: pm.FromEmail, Subject: pm.Subject, Text: pm.Text, HTML: pm.HTML}
	case ".sms":
		head, body, ok := strings.Cut(string(raw), "\n\n")
		from, isFrom := strings.CutPrefix(head, "From: ")
		if !ok || !isFrom {
			t.Fatalf("%s: want a From: line, a blank line and the body", file)
		}
		return core.ReceivedText{From: from, Text: strings.TrimSuffix(body, "\n")}
	}
	t.Fatalf("%s: neither .eml nor .sms", file)
	return core.ReceivedText{}
}

// tally counts the outcomes of one field (code or link) over the corpus. A
// wrong value is both a false positive and a false negative.
type tally struct{ truePos, falsePos, falseNeg int }

func (c *tally) add(want, got string) {
	switch {
	case want != "" && got == want:
		c.truePos++
	case want != "" && got == "":
		c.falseNeg++
	case want == "" && got != "":
		c.falsePos++
	case got != want:
		c.falsePos++
		c.falseNeg++
	}
}

func (c tally) precision() float64 { return ratio(c.truePos, c.truePos+c.falsePos) }
func (c tally) recall() float64    { return ratio(c.truePos, c.truePos+c.falseNeg) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

func TestVerificationCorpus(t *testing.T) {
	entries := readCorpus(t)
	checkCorpusShape(t, entries)

	var codes, links tally
	for _, e := range entries {
		v := core.FindVerification(receivedText(t, e.File))
		var code, link string
		if v != nil {
			code, link = v.Code, v.Link
			if want := kindOf(code, link); v.Kind != want {
				t.Errorf("%s: kind %q for code %q and link %q, want %q", e.File, v.Kind, code, link, want)
			}
		}
		codes.add(e.Code, code)
		links.add(e.Link, link)
		if code != e.Code {
			t.Logf("%s: code %q, want %q (%s)", e.File, code, e.Code, e.Note)
		}
		if link != e.Link {
			t.Logf("%s: link %q, want %q (%s)", e.File, link, e.Link, e.Note)
		}
	}
	report := fmt.Sprintf("verification corpus, %d messages: codes precision %.3f recall %.3f (tp %d, fp %d, fn %d); links precision %.3f recall %.3f (tp %d, fp %d, fn %d)",
		len(entries), codes.precision(), codes.recall(), codes.truePos, codes.falsePos, codes.falseNeg,
		links.precision(), links.recall(), links.truePos, links.falsePos, links.falseNeg)
	t.Log(report)
	for name, v := range map[string]float64{
		"code precision": codes.precision(), "code recall": codes.recall(),
		"link precision": links.precision(), "link recall": links.recall(),
	} {
		if v < 0.95 {
			t.Errorf("%s %.3f is below 0.95", name, v)
		}
	}
}

func kindOf(code, link string) core.VerificationKind {
	switch {
	case code != "" && link != "":
		return core.VerificationBoth
	case link != "":
		return core.VerificationLink
	}
	return core.VerificationCode
}

// checkCorpusShape holds the corpus to what it promises: every file listed
// once, at least 60 messages, 20 negatives, mail in HTML only, and all seven
// languages.
func checkCorpusShape(t *testing.T, entries []corpusEntry) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(verificationCorpus, "*.*"))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk, listed []string
	for _, f := range files {
		if base := filepath.Base(f); base != "manifest.json" {
			onDisk = append(onDisk, base)
		}
	}
	negatives, htmlOnly, langs := 0, 0, map[string]int{}
	for _, e := range entries {
		listed = append(listed, e.File)
		langs[e.Lang]++
		if e.Code == "" && e.Link == "" {
			negatives++
		}
		if strings.HasSuffix(e.File, ".eml") && receivedText(t, e.File).HTML != "" && !hasTextPart(t, e.File) {
			htmlOnly++
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, onDisk) {
		t.Errorf("manifest lists %v\nbut the folder holds %v", listed, onDisk)
	}
	if len(entries) < 60 || negatives < 20 || htmlOnly < 5 {
		t.Errorf("corpus has %d messages, %d negatives, %d HTML-only mails; want at least 60, 20, 5", len(entries), negatives, htmlOnly)
	}
	for _, lang := range []string{"en", "de", "fr", "es", "pt", "it", "nl"} {
		if langs[lang] < 5 {
			t.Errorf("%d messages in %q, want at least 5", langs[lang], lang)
		}
	}
}

// hasTextPart reports whether a corpus mail carries a text/plain part of its
// own (the parser derives Text from the HTML when it has none).
func hasTextPart(t *testing.T, file string) bool {
	raw, err := os.ReadFile(filepath.Join(verificationCorpus, file))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(strings.ToLower(string(raw)), "content-type: text/plain")
}

// BenchmarkVerification measures the rule on a 5 KB verification mail from
// the corpus and on a 1 MB newsletter (text and HTML, numbers and links
// throughout, nothing to find), beside the parse that ingest does anyway;
// a 25 MB body shows that the rule reads only a bounded start.
func BenchmarkVerification(b *testing.B) {
	small, err := os.ReadFile(filepath.Join(verificationCorpus, "en-clerk-sign-in-both.eml"))
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range []struct {
		name  string
		raw   []byte
		parse bool
	}{
		{"5KB", small, true},
		{"1MB", bulkyMail(1 << 20), true},
		{"25MB", bulkyMail(25 << 20), false},
	} {
		pm, err := mailmime.Parser{}.Parse(m.raw)
		if err != nil {
			b.Fatal(err)
		}
		in := core.ReceivedText{From: pm.FromEmail, Subject: pm.Subject, Text: pm.Text, HTML: pm.HTML}
		if m.parse {
			b.Run(m.name+"/parse", func(b *testing.B) {
				b.SetBytes(int64(len(m.raw)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := (mailmime.Parser{}).Parse(m.raw); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(m.name+"/find", func(b *testing.B) {
			b.SetBytes(int64(len(m.raw)))
			b.ReportAllocs()
			for b.Loop() {
				core.FindVerification(in)
			}
		})
	}
}

// bulkyMail is a multipart/alternative newsletter of about size bytes, half
// text and half HTML, dense with what the rule must look at and reject:
// numbers near cue words, prices, dates, links with tokens.
func bulkyMail(size int) []byte {
	const paragraph = "Order 48213 of 12/05/2025 ($35.99) is confirmed: sign in to track parcel 1Z999AA10123456784, " +
		"or call 415 555 0199. Code review #4821 passed. "
	var text, html strings.Builder
	for i := 0; text.Len() < size/2; i++ {
		text.WriteString(paragraph)
		fmt.Fprintf(&text, "https://news.example/a/%d?t=Zx8pQ2vT9kLm4Rn7Ws3Y%d\n", i, i)
		fmt.Fprintf(&html, `<p style="margin:0 0 12px 0">%s<a href="https://news.example/a/%d?t=Zx8pQ2vT9kLm4Rn7Ws3Y%d">Sign in to read more</a></p>`+"\n", paragraph, i, i)
	}
	return fmt.Appendf(nil, "From: News <news@news.example>\r\nTo: ada@agents.localhost\r\nSubject: Weekly digest\r\n"+
		"Date: Mon, 12 May 2025 08:00:00 +0000\r\nMessage-ID: <bulky@news.example>\r\nMIME-Version: 1.0\r\n"+
		"Content-Type: multipart/alternative; boundary=\"b\"\r\n\r\n--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n"+
		"--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><body>%s</body></html>\r\n--b--\r\n",
		text.String()+"Your code is 482913", html.String())
}

// BenchmarkReceive is what ingest does with a message before storing it:
// Describe, then the verification rule, on a message shaped as the
// bench's load generator sends them (scripts/bench-compare.sh: text and
// HTML, quoted-printable, a reply).
func BenchmarkReceive(b *testing.B) {
	raw, err := os.ReadFile("../../testdata/mail/smtpload.eml")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		pm, err := mailmime.Parser{}.Describe(raw)
		if err != nil {
			b.Fatal(err)
		}
		core.FindVerification(core.ReceivedText{From: pm.FromEmail, Subject: pm.Subject, Text: pm.Text, HTML: pm.HTML})
	}
}
