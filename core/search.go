package core

import (
	"html"
	"iter"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// SearchQuery is what a caller's `q` asks for, read by ParseSearch. The
// stores turn it into their dialect's full-text query (SQLite FTS5,
// PostgreSQL tsquery); the words are folded here (lower case, Latin
// accents removed) and stemmed by the database's English stemmer.
type SearchQuery struct {
	// Terms must all match (a negated one must not). A term of several
	// words is a phrase.
	Terms []SearchTerm
	// From and To keep messages whose sender, or one of whose recipients,
	// contains each of them (lower case).
	From, To []string
	// Filenames keep messages with an attachment whose name contains each.
	Filenames     []string
	HasAttachment bool
	Unread        bool
	// Before and After bound the creation time: before it, at or after it.
	Before, After *time.Time
}

// SearchTerm is one word or phrase of a query.
type SearchTerm struct {
	Words   []string // folded; several are a phrase
	Subject bool     // subject: only the subject
	Negated bool     // -word: must not match
}

// Positive are the terms that must match.
func (q SearchQuery) Positive() []SearchTerm { return q.filter(false) }

// Negative are the terms that must not match.
func (q SearchQuery) Negative() []SearchTerm { return q.filter(true) }

func (q SearchQuery) filter(negated bool) []SearchTerm {
	var out []SearchTerm
	for _, t := range q.Terms {
		if t.Negated == negated {
			out = append(out, t)
		}
	}
	return out
}

// Bounds on a query: what a person types, not a document.
const (
	MaxSearchLength = 1000 // bytes of q
	MaxSearchTerms  = 32   // words, phrases and filters
	searchField     = "q"
)

// ParseSearch reads a search query: words (all must match), "exact
// phrases", -word or -"phrase" (must not match), from:, to:, subject:,
// filename:, has:attachment, is:unread, is:read, before: and after:
// (YYYY-MM-DD, a UTC day, or an RFC 3339 time). A quote left open closes
// at the end; an unknown `name:value` is searched as its words. An empty
// query, a bad date or value, or one past the bounds is a validation error
// on "q". It never fails otherwise, whatever the input.
func ParseSearch(s string) (SearchQuery, error) {
	var q SearchQuery
	if len(s) > MaxSearchLength {
		return q, Invalid(searchField, "Ensure the query has no more than %d characters.", MaxSearchLength)
	}
	if !utf8.ValidString(s) {
		return q, Invalid(searchField, "The query is not valid UTF-8.")
	}
	count := 0
	for _, tok := range splitQuery(s) {
		count++
		if count > MaxSearchTerms {
			return q, Invalid(searchField, "Use at most %d words, phrases and filters.", MaxSearchTerms)
		}
		if err := q.add(tok); err != nil {
			return q, err
		}
	}
	if len(q.Terms) == 0 && len(q.From) == 0 && len(q.To) == 0 && len(q.Filenames) == 0 && !q.HasAttachment &&
		!q.Unread && q.Before == nil && q.After == nil {
		return q, Invalid(searchField, "Enter words or filters to search for.")
	}
	return q, nil
}

// SearchTarget is what a query searches. Mail takes every filter; texts
// and contacts have no subject or attachments, and contacts no sender,
// recipients or read state, so those filters are a 400 on q there rather
// than silently ignored (a query that cannot mean what was typed).
type SearchTarget string

const (
	SearchMail     SearchTarget = "mail"
	SearchTexts    SearchTarget = "texts"
	SearchContacts SearchTarget = "contacts"
)

// For reports whether every filter of q applies to target: a validation
// error on "q" naming the first that does not.
func (q SearchQuery) For(target SearchTarget) error {
	if target == SearchMail {
		return nil
	}
	subject := slices.ContainsFunc(q.Terms, func(t SearchTerm) bool { return t.Subject })
	uses := []filterUse{{"subject:", subject}, {"has:", q.HasAttachment}, {"filename:", len(q.Filenames) > 0}}
	if target == SearchContacts {
		uses = append(uses, filterUse{"from:", len(q.From) > 0}, filterUse{"to:", len(q.To) > 0}, filterUse{"is:", q.Unread})
	}
	for _, f := range uses {
		if f.used {
			return Invalid(searchField, "%s does not apply to %s.", f.name, target)
		}
	}
	return nil
}

type filterUse struct {
	name string
	used bool
}

// queryToken is one piece of a query: [-][name:]value, the value quoted or not.
type queryToken struct {
	negated bool
	name    string // "" for a plain word or phrase
	value   string
	quoted  bool
}

// splitQuery cuts a query at spaces outside quotes; an open quote runs to
// the end.
func splitQuery(s string) []queryToken {
	var out []queryToken
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return out
		}
		var t queryToken
		if s[0] == '-' && len(s) > 1 && !unicode.IsSpace(rune(s[1])) {
			t.negated, s = true, s[1:]
		}
		if s[0] != '"' {
			if i := strings.IndexByte(s, ':'); i > 0 && !strings.ContainsFunc(s[:i], unicode.IsSpace) && !strings.Contains(s[:i], `"`) {
				t.name, s = strings.ToLower(s[:i]), s[i+1:]
			}
		}
		if strings.HasPrefix(s, `"`) {
			t.quoted = true
			s = s[1:]
			end := strings.IndexByte(s, '"')
			if end < 0 {
				end = len(s)
			}
			t.value, s = s[:end], s[min(end+1, len(s)):]
		} else {
			end := strings.IndexFunc(s, unicode.IsSpace)
			if end < 0 {
				end = len(s)
			}
			t.value, s = s[:end], s[end:]
		}
		out = append(out, t)
	}
}

func (q *SearchQuery) add(t queryToken) error {
	value := strings.TrimSpace(t.value)
	switch t.name {
	case "":
		q.addWords(value, t.quoted, false, t.negated)
	case "subject":
		q.addWords(value, t.quoted, true, t.negated)
	case "from", "to", "filename":
		v := strings.ToLower(value)
		if v == "" {
			return Invalid(searchField, "%s: needs a value.", t.name)
		}
		if t.negated {
			return Invalid(searchField, "-%s: is not supported; use %s: alone.", t.name, t.name)
		}
		switch t.name {
		case "from":
			q.From = append(q.From, v)
		case "to":
			q.To = append(q.To, v)
		default:
			q.Filenames = append(q.Filenames, v)
		}
	case "has":
		if !strings.EqualFold(value, "attachment") || t.negated {
			return Invalid(searchField, "has: takes attachment.")
		}
		q.HasAttachment = true
	case "is":
		switch {
		case strings.EqualFold(value, "unread") && !t.negated, strings.EqualFold(value, "read") && t.negated:
			q.Unread = true
		default:
			return Invalid(searchField, "is: takes unread.")
		}
	case "before", "after":
		at, ok := searchDate(value)
		if !ok || t.negated {
			return Invalid(searchField, "%s: takes a date (YYYY-MM-DD) or an RFC 3339 time.", t.name)
		}
		if t.name == "before" {
			q.Before = &at
		} else {
			q.After = &at
		}
	default:
		// Not a filter: the whole token is words ("re:", "https://…").
		q.addWords(t.name+" "+value, t.quoted, false, t.negated)
	}
	return nil
}

// addWords adds a phrase (quoted, or written with hyphens or dots as
// "e-mail" is) or, for an unknown name:value, its words one by one.
func (q *SearchQuery) addWords(s string, quoted, subject, negated bool) {
	words := SearchWords(s)
	if len(words) == 0 {
		return
	}
	if quoted || !strings.ContainsFunc(strings.TrimSpace(s), unicode.IsSpace) {
		q.Terms = append(q.Terms, SearchTerm{Words: words, Subject: subject, Negated: negated})
		return
	}
	for _, w := range words {
		q.Terms = append(q.Terms, SearchTerm{Words: []string{w}, Subject: subject, Negated: negated})
	}
}

func searchDate(s string) (time.Time, bool) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, true
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), true
	}
	return time.Time{}, false
}

// SearchWords are the words of s as the index holds them: runs of letters
// and digits, folded (lower case, Latin accents removed), each at most
// 64 bytes.
func SearchWords(s string) []string { return slices.Collect(EachSearchWord(s)) }

// EachSearchWord yields the words of s as SearchWords has them, without
// gathering them: an index reads every word of a message's text.
func EachSearchWord(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		f := fold(s)
		start := -1 // of the word being read
		for i := 0; i <= len(f); {
			inWord, n := false, 1
			if i < len(f) {
				if c := f[i]; c < utf8.RuneSelf {
					inWord = 'a' <= c && c <= 'z' || '0' <= c && c <= '9' // folded: no upper case
				} else {
					var r rune
					r, n = utf8.DecodeRuneInString(f[i:])
					inWord = isSearchRune(r)
				}
			}
			switch {
			case inWord && start < 0:
				start = i
			case !inWord && start >= 0:
				if !yield(cutUTF8(f[start:i], 64)) {
					return
				}
				start = -1
			}
			i += n
		}
	}
}

// isSearchRune says which characters make words, for the index and the query.
func isSearchRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// Highlights are up to three short snippets of a hit's subject (mail's;
// "" elsewhere), then of its texts, around the words that the query's
// positive terms matched, with those words wrapped in <mark>…</mark> and
// everything else HTML-escaped. A word is marked where its term matched by
// the target's rule (searchKey): a phrase only where its words stand
// together, a subject: term only in the subject. The databases decide what
// matches; this only has to show where, by the same rule as SearchMatches.
func Highlights(q SearchQuery, target SearchTarget, subject string, texts ...string) []string {
	terms := searchKeys(q.Positive(), target)
	if len(terms) == 0 {
		return []string{}
	}
	out := []string{}
	for i, text := range append([]string{subject}, texts...) {
		words := textWords(cutUTF8(text, highlightTextLimit), target)
		marked := make([]bool, len(words))
		for _, t := range terms {
			if t.subject && i > 0 {
				continue
			}
			for at := range words {
				if t.matchesAt(words, at) {
					for j := range t.keys {
						marked[at+j] = true
					}
				}
			}
		}
		out = append(out, snippets(text, words, marked, 3-len(out))...)
		if len(out) == 3 {
			break
		}
	}
	return out
}

const (
	highlightTextLimit = 64 << 10
	snippetContext     = 6 // words either side of the first match of a snippet
	snippetWords       = 20
)

// textWord is a word of a text: where it stands and its searchKey.
type textWord struct {
	start, end int
	key        string
}

// textWords cuts text into its words (runs of letters and digits, as
// SearchWords cuts them), each with its key for target.
func textWords(text string, target SearchTarget) []textWord {
	var words []textWord
	add := func(start, end int) {
		words = append(words, textWord{start, end, searchKey(text[start:end], target)})
	}
	start := -1
	for i, r := range text {
		inWord := isSearchRune(r)
		switch {
		case inWord && start < 0:
			start = i
		case !inWord && start >= 0:
			add(start, i)
			start = -1
		}
	}
	if start >= 0 {
		add(start, len(text))
	}
	return words
}

// searchKey is what a word is compared by, in a query and in a text alike:
// folded and cut as the index holds it; for mail and texts also stemmed
// (invoices and invoiced are invoice), while contacts match whole words
// (names are not English: ann is not annie).
func searchKey(word string, target SearchTarget) string {
	k := fold(word)
	if len(k) > 64 {
		k = cutUTF8(k, 64)
	}
	if target == SearchContacts {
		return k
	}
	return searchStem(k)
}

// keyedTerm is a query term as the keys of its words.
type keyedTerm struct {
	keys    []string
	subject bool
}

func searchKeys(terms []SearchTerm, target SearchTarget) []keyedTerm {
	out := make([]keyedTerm, 0, len(terms))
	for _, t := range terms {
		k := keyedTerm{subject: t.Subject}
		for _, w := range t.Words {
			k.keys = append(k.keys, searchKey(w, target))
		}
		out = append(out, k)
	}
	return out
}

// matchesAt reports whether the term's words are the words of text from at on.
func (t keyedTerm) matchesAt(words []textWord, at int) bool {
	if at+len(t.keys) > len(words) {
		return false
	}
	for j, k := range t.keys {
		if words[at+j].key != k {
			return false
		}
	}
	return true
}

// snippets cuts up to n snippets of text around its marked words.
func snippets(text string, words []textWord, marked []bool, n int) []string {
	var out []string
	for i := 0; i < len(words) && len(out) < n; i++ {
		if !marked[i] {
			continue
		}
		from := max(0, i-snippetContext)
		to := min(len(words), from+snippetWords)
		var b strings.Builder
		pos := 0 // a snippet from the text's start keeps what leads its first word (+1415…)
		if from > 0 {
			b.WriteString("…")
			pos = words[from].start
		}
		for j := from; j < to; j++ {
			w := words[j]
			b.WriteString(html.EscapeString(oneLine(text[pos:w.start])))
			if marked[j] {
				b.WriteString("<mark>" + html.EscapeString(text[w.start:w.end]) + "</mark>")
			} else {
				b.WriteString(html.EscapeString(text[w.start:w.end]))
			}
			pos = w.end
		}
		if to < len(words) {
			b.WriteString("…")
		} else {
			b.WriteString(html.EscapeString(oneLine(text[pos:])))
		}
		out = append(out, strings.TrimSpace(b.String()))
		i = to - 1
	}
	return out
}

// oneLine turns each run of white space into one space.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	if space {
		b.WriteByte(' ')
	}
	return b.String()
}

// searchStem strips the English endings a stemmer would (plural, -ed,
// -ing, -ly), and the consonant doubled before -ed and -ing (running,
// stopped), so that the forms of a word share one stem.
func searchStem(w string) string {
	for _, suffix := range []string{"ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s", "e", "y"} {
		if strings.HasSuffix(w, suffix) && utf8.RuneCountInString(w)-len(suffix) >= 3 {
			stem := w[:len(w)-len(suffix)]
			if n := len(stem); strings.Contains(suffix, "ed") || strings.Contains(suffix, "ing") {
				if c := stem[n-1]; c == stem[n-2] && c >= 'a' && c <= 'z' && strings.IndexByte("aeiouylsz", c) < 0 {
					stem = stem[:n-1]
				}
			}
			return stem
		}
	}
	return w
}

// SearchMatches reports whether a hit's subject and text match the query's
// words by target's rule, the one Highlights shows (the memory fake's
// search; the SQL stores stem with the database's stemmer).
func SearchMatches(q SearchQuery, target SearchTarget, subject, text string) bool {
	subjectWords, bodyWords := textWords(subject, target), textWords(text, target)
	has := func(t keyedTerm) bool {
		for _, words := range [][]textWord{subjectWords, bodyWords} {
			for at := range words {
				if t.matchesAt(words, at) {
					return true
				}
			}
			if t.subject {
				break
			}
		}
		return false
	}
	for i, t := range searchKeys(q.Terms, target) {
		if has(t) == q.Terms[i].Negated {
			return false
		}
	}
	return true
}
