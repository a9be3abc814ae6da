package sqlstore_test

import (
	"bufio"
	"database/sql"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/core"
)

// englishPG is a connection to the PostgreSQL of the run, for the checks
// of the search document against the database's own text search.
func englishPG(t *testing.T) *sql.DB {
	t.Helper()
	if !slices.Contains(sqlstoretest.Dialects(), sqlstore.Postgres) {
		t.Skipf("%s is not set", sqlstoretest.PostgresURLVar)
	}
	pg, err := sql.Open("pgx", os.Getenv(sqlstoretest.PostgresURLVar))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	return pg
}

// pgEnglishDocument is PostgreSQL's own document of folded text, as the
// store made it before it made its own.
const pgEnglishDocument = `setweight(to_tsvector('english', $2), 'A') || setweight(to_tsvector('english', $3), 'B')`

// corpusWords are up to n distinct words of Go's own sources (English
// comments, identifiers, and the scripts of its Unicode tests) as they
// stand there, before folding.
func corpusWords(t *testing.T, n int) []string {
	t.Helper()
	seen := make(map[string]bool)
	var words []string
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("finding Go's sources: %v", err)
	}
	errEnough := fs.SkipAll
	err = filepath.WalkDir(filepath.Join(strings.TrimSpace(string(goroot)), "src"), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		lines := bufio.NewScanner(f)
		lines.Buffer(nil, 1<<20)
		for lines.Scan() {
			for _, w := range strings.FieldsFunc(lines.Text(), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
				if !seen[w] {
					seen[w] = true
					words = append(words, w)
				}
			}
		}
		if len(words) >= n {
			return errEnough
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(words) < n/2 {
		t.Fatalf("Go's sources gave %d words", len(words))
	}
	return words
}

// TestEnglishDocumentIsPostgresOwn: for every word, and for prose made of
// words and punctuation, the store's document is the one PostgreSQL's
// english configuration makes of the same text (its stemmer, its stop
// words, its positions and their bounds), so rows indexed before and after
// answer a query alike.
func TestEnglishDocumentIsPostgresOwn(t *testing.T) {
	pg := englishPG(t)
	words := corpusWords(t, 60_000)
	docs, folded := make([]string, len(words)), make([]string, len(words))
	var vocabulary []string // the words that fold to themselves, for prose
	for i, w := range words {
		docs[i] = sqlstore.EnglishDocument("", w)
		folded[i] = strings.Join(core.SearchWords(w), " ")
		if folded[i] == w {
			vocabulary = append(vocabulary, w)
		}
	}
	rows, err := pg.Query(`SELECT raw, doc, (`+strings.ReplaceAll(strings.ReplaceAll(pgEnglishDocument, "$2", "''"), "$3", "w")+`)::text
		FROM unnest($1::text[], $2::text[], $3::text[]) AS r (raw, doc, w) WHERE doc::tsvector <> `+
		strings.ReplaceAll(strings.ReplaceAll(pgEnglishDocument, "$2", "''"), "$3", "w")+` LIMIT 20`, words, docs, folded)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var w, ours, theirs string
		if err := rows.Scan(&w, &ours, &theirs); err != nil {
			t.Fatal(err)
		}
		t.Errorf("%q: ours %s, PostgreSQL's %s", w, ours, theirs)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewSource(1))
	prose := func(vocabulary []string, n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(vocabulary[rng.Intn(len(vocabulary))])
			b.WriteString([]string{" ", " ", " ", ", ", ". ", ".\n\n", "; ", "? "}[rng.Intn(8)])
			if i%97 == 0 {
				b.WriteString("the ")
			}
		}
		return b.String()
	}
	few := []string{"invoice", "meeting", "the", "shipment", "of", "deployed", "approved", "2026", "v2", "zurich", "東京"}
	for _, c := range []struct{ name, subject, body string }{
		{"a message", "quarterly report", prose(vocabulary, 400)},
		{"no subject", "", prose(vocabulary, 300)},
		{"no body", "meeting notes for the", ""},
		{"a subject ending in a stop word", "follow up on it", prose(few, 50)},
		{"a word in both", "invoice invoice", "the invoice, and the invoice"},
		{"a word more than 256 times", strings.Repeat("shipment ", 300), prose(few, 600)},
		{"past the last position", prose(few, 40), prose(few, 20_000)},
		{"a long subject", prose(few, 17_000), prose(few, 100)},
	} {
		var ours, theirs string
		var equal bool
		doc := sqlstore.EnglishDocument(c.subject, c.body)
		err := pg.QueryRow(`SELECT $1::tsvector = (`+pgEnglishDocument+`), $1::tsvector::text, (`+pgEnglishDocument+`)::text`,
			doc, c.subject, c.body).Scan(&equal, &ours, &theirs)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !equal {
			t.Errorf("%s: ours\n%.2000s\nPostgreSQL's\n%.2000s", c.name, ours, theirs)
		}
	}
}

// TestEnglishDocumentAnswersEveryQueryWord: every word of a text, and every
// two words side by side, find it as a query asks for them, where
// PostgreSQL's parser would read an address, a host, a path, a version or
// a hyphenated word as one token that no query's word can be.
func TestEnglishDocumentAnswersEveryQueryWord(t *testing.T) {
	pg := englishPG(t)
	text := "Write to Alice.Smith@example.com or see https://docs.example.org/guide/setup?step=2, " +
		"the state-of-the-art build v1.2.3 (3.14 times faster) in /usr/local/bin — déjà vu, Zürich 東京."
	doc := sqlstore.EnglishDocument("Re: build-42 notes", text)
	for _, part := range [][]string{core.SearchWords("Re: build-42 notes"), core.SearchWords(text)} {
		for i, w := range part {
			for _, q := range []string{w, strings.Join(part[max(i-1, 0):i+1], " <-> ")} {
				var found bool
				if err := pg.QueryRow(`SELECT $1::tsvector @@ to_tsquery('english', $2)`, doc, q).Scan(&found); err != nil {
					t.Fatal(err)
				}
				if !found && !isStopWordQuery(t, pg, q) {
					t.Errorf("%q does not find the text", q)
				}
			}
		}
	}
}

// isStopWordQuery reports whether q is only stop words, which find nothing.
func isStopWordQuery(t *testing.T, pg *sql.DB, q string) bool {
	var lexemes int
	if err := pg.QueryRow(`SELECT numnode(to_tsquery('english', $1))`, q).Scan(&lexemes); err != nil {
		t.Fatal(err)
	}
	return lexemes == 0
}

// BenchmarkEnglishDocument makes the document of a 5 KB message's text
// (2.4 KB of prose of the load generator's kind).
func BenchmarkEnglishDocument(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	vocabulary := strings.Fields(`the agent will follow up on your request regarding invoice shipment
		contract meeting schedule quarterly report budget forecast review please confirm receipt attached
		document summary action items next steps deadline Friday Monday customer support ticket escalation
		priority access credentials rotation vault secret password policy onboarding calendar invitation
		agenda notes minutes thanks regards best kind sincerely café naïve résumé déjà vu Zürich 東京 data
		pipeline latency throughput error budget incident postmortem owner status green amber red blocked`)
	var body strings.Builder
	for body.Len() < 2400 {
		body.WriteString(vocabulary[rng.Intn(len(vocabulary))])
		body.WriteString([]string{" ", " ", " ", ". "}[rng.Intn(4)])
	}
	b.ReportAllocs()
	for b.Loop() {
		sqlstore.EnglishDocument("Quarterly report", body.String())
	}
}
