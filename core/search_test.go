package core

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParseSearch(t *testing.T) {
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]SearchQuery{
		"Invoice  Café":                {Terms: []SearchTerm{{Words: []string{"invoice"}}, {Words: []string{"cafe"}}}},
		`"exact phrase" -spam`:         {Terms: []SearchTerm{{Words: []string{"exact", "phrase"}}, {Words: []string{"spam"}, Negated: true}}},
		`-"not this" e-mail`:           {Terms: []SearchTerm{{Words: []string{"not", "this"}, Negated: true}, {Words: []string{"e", "mail"}}}},
		`"open quote runs to the end`:  {Terms: []SearchTerm{{Words: []string{"open", "quote", "runs", "to", "the", "end"}}}},
		`subject:"Your receipt" x`:     {Terms: []SearchTerm{{Words: []string{"your", "receipt"}, Subject: true}, {Words: []string{"x"}}}},
		"from:Bank.Example to:me@x.io": {From: []string{"bank.example"}, To: []string{"me@x.io"}},
		"has:attachment is:unread":     {HasAttachment: true, Unread: true},
		"-is:read filename:Report.PDF": {Unread: true, Filenames: []string{"report.pdf"}},
		"after:2026-11-01 before:2026-11-21T08:00:00+01:00": {After: &day,
			Before: func() *time.Time { t := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC); return &t }()},
		"re:hello":       {Terms: []SearchTerm{{Words: []string{"re"}}, {Words: []string{"hello"}}}},
		"color:blue":     {Terms: []SearchTerm{{Words: []string{"color"}}, {Words: []string{"blue"}}}},
		"Größe ÉTÉ":      {Terms: []SearchTerm{{Words: []string{"grosse"}}, {Words: []string{"ete"}}}},
		`"" word`:        {Terms: []SearchTerm{{Words: []string{"word"}}}},
		"-- word":        {Terms: []SearchTerm{{Words: []string{"word"}}}},
		"https://x.io/a": {Terms: []SearchTerm{{Words: []string{"https"}}, {Words: []string{"x"}}, {Words: []string{"io"}}, {Words: []string{"a"}}}},
	}
	for in, want := range cases {
		got, err := ParseSearch(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n got %+v %v\nwant %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "   ", `""`, "-", "before:yesterday", "after:2026-13-01", "has:pdf", "is:starred",
		"from:", "-from:x", strings.Repeat("a ", 600), strings.Repeat("w ", MaxSearchTerms+1), "\xff"} {
		_, err := ParseSearch(bad)
		if e, ok := err.(*Error); !ok || e.Kind != KindInvalid || len(e.Fields["q"]) == 0 {
			t.Errorf("%q: %v, want a validation error on q", bad, err)
		}
	}
}

func TestSearchWords(t *testing.T) {
	for in, want := range map[string][]string{
		"":                        nil,
		" -- ":                    nil,
		"Alice.Smith@Example.COM": {"alice", "smith", "example", "com"},
		"state-of-the-art v1.2.3": {"state", "of", "the", "art", "v1", "2", "3"},
		"déjà—vu Zürich東京 ٣٤x":    {"deja", "vu", "zurich東京", "٣٤x"},
		"a\xffb_c\u0301d":         {"a", "b", "c", "d"},
		strings.Repeat("東", 30):   {strings.Repeat("東", 21)}, // cut at 64 bytes, between characters
		strings.Repeat("Ab", 40):  {strings.Repeat("ab", 32)},
	} {
		if got := SearchWords(in); !reflect.DeepEqual(got, want) {
			t.Errorf("SearchWords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHighlights(t *testing.T) {
	q, _ := ParseSearch(`invoices "due date" -spam`)
	got := Highlights(q, SearchMail, "Your invoice <#42>", "Hello,\n\nthe invoiced amount & the due  date are below. "+
		"One two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty Invoices again.")
	want := []string{
		"Your <mark>invoice</mark> &lt;#42&gt;",
		"Hello, the <mark>invoiced</mark> amount &amp; the <mark>due</mark> <mark>date</mark> are below. One two three four five six seven eight nine ten eleven…",
		"…fifteen sixteen seventeen eighteen nineteen twenty <mark>Invoices</mark> again.",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	if h := Highlights(SearchQuery{Unread: true}, SearchMail, "text"); h == nil || len(h) != 0 {
		t.Fatalf("no words: %v", h)
	}
	if !SearchMatches(q, SearchMail, "Invoice", "the due date") || SearchMatches(q, SearchMail, "Invoice", "the due date, spam") || SearchMatches(q, SearchMail, "Invoice", "date due") {
		t.Fatal("SearchMatches")
	}
}

// FuzzParseSearch: whatever a person types, the parser answers a query or
// a validation error on q, and highlights are well-formed.
func FuzzParseSearch(f *testing.F) {
	for _, s := range []string{`"a b" -c from:x subject:"y`, "before:2026-01-01", `-"`, `:::`, `a:"b`, "is:unread", "\x00\"\\'--;DROP TABLE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseSearch(s)
		if err != nil {
			if e, ok := err.(*Error); !ok || e.Kind != KindInvalid || len(e.Fields["q"]) == 0 {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		for _, term := range q.Terms {
			for _, w := range term.Words {
				if w == "" || strings.ContainsFunc(w, func(r rune) bool { return !isSearchRune(r) }) {
					t.Fatalf("%q: word %q is not letters and digits", s, w)
				}
			}
		}
		for _, h := range Highlights(q, SearchMail, s, s) {
			if !utf8.ValidString(h) || strings.Count(h, "<mark>") != strings.Count(h, "</mark>") ||
				strings.Count(h, "<") != 2*strings.Count(h, "<mark>") {
				t.Fatalf("%q: highlight %q", s, h)
			}
		}
	})
}

func TestSearchFor(t *testing.T) {
	for in, want := range map[string][3]bool{ // applies to mail, texts, contacts
		`code -"not this" before:2026-01-01`: {true, true, true},
		"from:+1415 to:x is:unread":          {true, true, false},
		"subject:invoice":                    {true, false, false},
		"has:attachment":                     {true, false, false},
		"filename:report":                    {true, false, false},
	} {
		q, err := ParseSearch(in)
		if err != nil {
			t.Fatal(err)
		}
		for i, target := range []SearchTarget{SearchMail, SearchTexts, SearchContacts} {
			err := q.For(target)
			if (err == nil) != want[i] {
				t.Errorf("%q for %s: %v", in, target, err)
			}
			if e, ok := err.(*Error); err != nil && (!ok || e.Kind != KindInvalid || len(e.Fields["q"]) == 0) {
				t.Errorf("%q for %s: %v, want a validation error on q", in, target, err)
			}
		}
	}
}

// TestHighlightsMarkWhatMatched: a highlight marks the words the query
// matched under its target's rule and nothing else: contacts match whole
// words (ann is not annie), mail and texts the forms of a word (not every
// word that starts with it), a phrase only where its words stand together,
// and subject: only in the subject.
func TestHighlightsMarkWhatMatched(t *testing.T) {
	for _, c := range []struct {
		target  SearchTarget
		q       string
		subject string
		texts   []string
		want    []string
	}{
		{SearchContacts, "ann", "", []string{"Ann Smith annie", "ann.smith@acme.example", "+14155550142"},
			[]string{"<mark>Ann</mark> Smith annie", "<mark>ann</mark>.smith@acme.example"}},
		{SearchContacts, "14155550142", "", []string{"Ann Smith", "", "+14155550142"},
			[]string{"+<mark>14155550142</mark>"}},
		{SearchContacts, "muller", "", []string{"Zoë Müller-Lüdenscheidt"}, []string{"Zoë <mark>Müller</mark>-Lüdenscheidt"}},
		{SearchTexts, "car", "", []string{"Careful: the cars and the car park, carrot"},
			[]string{"Careful: the <mark>cars</mark> and the <mark>car</mark> park, carrot"}},
		{SearchTexts, "running", "", []string{"Run, runs, running, runner"},
			[]string{"<mark>Run</mark>, <mark>runs</mark>, <mark>running</mark>, runner"}},
		{SearchMail, `"due date"`, "Due soon", []string{"The date is due; the due date is near."},
			[]string{"The date is due; the <mark>due</mark> <mark>date</mark> is near."}},
		{SearchMail, "subject:invoice code", "Your invoice", []string{"The invoice code is 42."},
			[]string{"Your <mark>invoice</mark>", "The invoice <mark>code</mark> is 42."}},
	} {
		q, err := ParseSearch(c.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := Highlights(q, c.target, c.subject, c.texts...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q:\n got %q\nwant %q", c.target, c.q, got, c.want)
		}
	}
	ann, _ := ParseSearch("ann")
	if SearchMatches(ann, SearchContacts, "", "Annie Smith") || !SearchMatches(ann, SearchContacts, "", "ann.smith@acme.example") {
		t.Error("contacts match whole words")
	}
	car, _ := ParseSearch("car")
	if SearchMatches(car, SearchTexts, "", "Careful now") || !SearchMatches(car, SearchTexts, "", "Two cars") {
		t.Error("texts match the forms of a word")
	}
}
