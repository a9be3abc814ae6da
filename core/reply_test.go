package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// replyCase is one reply of the corpus in testdata/replies (generate.py
// there describes the format).
type replyCase struct {
	name, client, lang, shape string
	text, html                string
	hasHTML                   bool
	want                      []string
}

func readReplyCases(t *testing.T) []replyCase {
	t.Helper()
	files, err := filepath.Glob("../testdata/replies/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var cases []replyCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := replyCase{name: strings.TrimSuffix(filepath.Base(f), ".txt")}
		head, rest, _ := strings.Cut(string(b), "--- text\n")
		for _, l := range strings.Split(head, "\n") {
			k, v, _ := strings.Cut(l, ": ")
			switch k {
			case "client":
				c.client = v
			case "lang":
				c.lang = v
			case "shape":
				c.shape = v
			}
		}
		rest, want, _ := strings.Cut(rest, "\n--- want\n")
		c.text, c.html, c.hasHTML = strings.Cut(rest, "\n--- html\n")
		c.html = strings.TrimSuffix(c.html, "\n")
		c.want = shownLines(want)
		cases = append(cases, c)
	}
	return cases
}

// shownLines are the lines a reader sees, trimmed, quote markers dropped
// (an HTML quote shows none), blank lines left out.
func shownLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimLeft(strings.TrimFunc(l, unicode.IsSpace), "> ")
		if l = strings.TrimFunc(l, unicode.IsSpace); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// lostLines are the lines of want missing from got.
func lostLines(want, got []string) []string {
	have := map[string]bool{}
	for _, l := range got {
		have[l] = true
	}
	var lost []string
	for _, l := range want {
		if !have[l] {
			lost = append(lost, l)
		}
	}
	return lost
}

// TestReplyCorpus scores ExtractReply on the corpus: a case is exact when
// both bodies show the wanted lines and nothing else; new text is lost when
// a wanted line is missing from either. Targets: nothing lost anywhere,
// exact in at least 95% of cases.
func TestReplyCorpus(t *testing.T) {
	cases := readReplyCases(t)
	if len(cases) < 120 {
		t.Fatalf("%d cases, want at least 120", len(cases))
	}
	exact, lost := 0, 0
	byClient := map[string][2]int{}
	for _, c := range cases {
		r := ExtractReply(c.text, c.html)
		outputs := [][]string{shownLines(r.Text)}
		if c.hasHTML {
			outputs = append(outputs, shownLines(readHTML(r.HTML).text))
		}
		ok, kept := true, true
		for i, got := range outputs {
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				ok = false
				t.Logf("%s (%s): got %q, want %q", c.name, []string{"text", "html"}[i], got, c.want)
			}
			if l := lostLines(c.want, got); len(l) > 0 {
				kept = false
				t.Errorf("%s (%s) lost new text %q", c.name, []string{"text", "html"}[i], l)
			}
		}
		s := byClient[c.client]
		s[1]++
		if ok {
			exact++
			s[0]++
		}
		if !kept {
			lost++
		}
		byClient[c.client] = s
	}
	for client, s := range byClient {
		t.Logf("%-16s %3d/%3d exact", client, s[0], s[1])
	}
	t.Logf("%d cases: exact %d (%.1f%%), new text kept in %d (%.1f%%)", len(cases), exact, 100*float64(exact)/float64(len(cases)),
		len(cases)-lost, 100*float64(len(cases)-lost)/float64(len(cases)))
	if exact*100 < 95*len(cases) {
		t.Errorf("exact in %d of %d cases, want at least 95%%", exact, len(cases))
	}
}

// BenchmarkExtractReply: the cost of extracting a reply at read time, per
// corpus message and for a message whose bodies are each at the stored
// limit (core.MaxStoredBody); BenchmarkFindVerificationCorpus is the
// per-message rule receiving already runs, for scale.
func BenchmarkExtractReply(b *testing.B) {
	cases := readReplyCases(&testing.T{})
	b.Run("corpus", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			c := cases[i%len(cases)]
			ExtractReply(c.text, c.html)
		}
	})
	b.Run("1MiB", func(b *testing.B) {
		text := strings.Repeat("> "+strings.Repeat("quoted words ", 6)+"\n", MaxStoredBody/82)
		html := strings.Repeat("<blockquote type=\"cite\"><div>"+strings.Repeat("quoted words ", 6)+"</div></blockquote>\n", MaxStoredBody/128)
		text, html = "New text.\n\nOn Mon, Feb 3, 2025 at 10:15 Anna <anna@example.com> wrote:\n"+text, "<div>New text.</div>"+html
		for b.Loop() {
			ExtractReply(text, html)
		}
	})
	b.Run("verification-corpus", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			c := cases[i%len(cases)]
			FindVerification(ReceivedText{From: "anna@example.com", Text: c.text, HTML: c.html})
		}
	})
}

// FuzzExtractReply: any bodies, however broken, give a result that is
// never empty when the body has text, and one line of text (nothing to
// quote) comes back unchanged.
func FuzzExtractReply(f *testing.F) {
	f.Add("Hi\n\nOn Mon, Feb 3, 2025 at 10:15 Anna <a@example.com> wrote:\n> q\n", `<div>Hi</div><blockquote type="cite">q</blockquote>`)
	f.Add("> only a quote\n> more\n> more\n", "<blockquote><p>only</blockquote></div></p><div")
	f.Add("a < b\n-- \nsig", "<pre class=moz-signature>-- \nBob</pre><!-- x")
	f.Fuzz(func(t *testing.T, text, html string) {
		r := ExtractReply(text, html)
		if strings.TrimSpace(text) != "" && strings.TrimSpace(r.Text) == "" {
			t.Errorf("text %q gave nothing", text)
		}
		if strings.TrimSpace(html) != "" && r.HTML == "" {
			t.Errorf("html %q gave nothing", html)
		}
		if !strings.Contains(text, "\n") && r.Text != text {
			t.Errorf("text %q with nothing quoted became %q", text, r.Text)
		}
	})
}
