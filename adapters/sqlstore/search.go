package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/callsign/callsign/core"
)

// The full-text index of mail (migration 00016): SQLite's FTS5 table
// email_search (columns search_subject, search_body; rowid = message id)
// and PostgreSQL's email_search (email_id, doc tsvector: subject weight A,
// text weight B). core.ParseSearch reads the query; this file says it in
// each dialect. Query words reach the database only as bound parameters
// and only as runs of letters and digits (core.SearchWords), so no query
// can change the SQL around them.

// searchBodyLimit is how much of a text body the index reads.
const searchBodyLimit = 200_000

// indexMessage writes m's index row in the transaction that stores it.
func (db *DB) indexMessage(ctx context.Context, tx *preparedTx, m core.EmailMessage, more string) error {
	body := cutText(m.Text, searchBodyLimit)
	if more != "" {
		body += "\n" + more
	}
	q := `INSERT INTO email_search (rowid, search_subject, search_body) VALUES (?, ?, ?)`
	if db.dialect == Postgres {
		q = `INSERT INTO email_search (email_id, doc) VALUES (?, setweight(to_tsvector('english', search_fold(?)), 'A') ||
			setweight(to_tsvector('english', search_fold(?)), 'B'))`
	}
	_, err := tx.ExecContext(ctx, db.q(q), m.ID, m.Subject, body)
	return err
}

// cutText is at most n bytes of s, cut at a character boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// searchSQL is a query's part of a message list: what joins the index
// (with its arguments), the conditions, and the order by relevance.
type searchSQL struct {
	join     string
	joinArgs []any
	rank     string // an ORDER BY term, most relevant first; "" without words
}

// messageSearch adds q's conditions to w and returns the join and ranking.
func (db *DB) messageSearch(q core.SearchQuery, w *where) searchSQL {
	var s searchSQL
	pos, neg := q.Positive(), q.Negative()
	if db.dialect == Postgres {
		if len(pos) > 0 {
			s.join = ` JOIN email_search ON email_search.email_id = email_messages.id, (SELECT ` + tsquery(pos) + ` AS tsq) search`
			s.joinArgs = tsqueryArgs(pos)
			w.add("email_search.doc @@ search.tsq")
			s.rank = "ts_rank(email_search.doc, search.tsq) DESC"
		}
		if len(neg) > 0 {
			w.add(`NOT EXISTS (SELECT 1 FROM email_search n WHERE n.email_id = email_messages.id AND n.doc @@ (`+tsquery(neg)+`))`,
				tsqueryArgs(neg)...)
		}
	} else {
		if len(pos) > 0 {
			s.join = ` JOIN email_search ON email_search.rowid = email_messages.id`
			w.add("email_search MATCH ?", ftsMatch(pos))
			// The subject weighs four times the body.
			s.rank = "bm25(email_search, 4.0, 1.0)"
		}
		if len(neg) > 0 {
			// FTS5's NOT needs a left side; each excluded term is its own look-up.
			for _, t := range neg {
				w.add("email_messages.id NOT IN (SELECT rowid FROM email_search WHERE email_search MATCH ?)", ftsMatch([]core.SearchTerm{t}))
			}
		}
	}
	for _, f := range q.From {
		w.add(`lower(from_email) LIKE ? ESCAPE '\'`, likeContains(f))
	}
	for _, t := range q.To {
		w.add(`(lower(to_addrs) LIKE ? ESCAPE '\' OR lower(cc_addrs) LIKE ? ESCAPE '\')`, likeContains(t), likeContains(t))
	}
	if q.HasAttachment {
		w.add(`EXISTS (SELECT 1 FROM attachments a WHERE a.message_id = email_messages.id AND a.inline = ?)`, false)
	}
	for _, name := range q.Filenames {
		w.add(`EXISTS (SELECT 1 FROM attachments a WHERE a.message_id = email_messages.id AND lower(a.filename) LIKE ? ESCAPE '\')`,
			likeContains(name))
	}
	if q.Unread {
		w.add("is_read = ?", false)
	}
	if q.After != nil {
		w.add("created_at >= ?", us(*q.After))
	}
	if q.Before != nil {
		w.add("created_at < ?", us(*q.Before))
	}
	return s
}

// ftsMatch is an FTS5 query of terms, all required: each a quoted phrase
// (a word is a phrase of one), the subject's limited to its column.
func ftsMatch(terms []core.SearchTerm) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		p := `"` + strings.Join(t.Words, " ") + `"`
		if t.Subject {
			p = "search_subject : " + p
		}
		parts[i] = p
	}
	return strings.Join(parts, " AND ")
}

// tsquery is a PostgreSQL tsquery of terms, all required, each built by
// to_tsquery from one bound argument (tsqueryArgs).
func tsquery(terms []core.SearchTerm) string {
	parts := make([]string, len(terms))
	for i := range terms {
		parts[i] = "to_tsquery('english', ?)"
	}
	return strings.Join(parts, " && ")
}

// tsqueryArgs are tsquery's arguments: a phrase's words joined by <->,
// each limited to weight A (the subject) for subject:.
func tsqueryArgs(terms []core.SearchTerm) []any {
	args := make([]any, len(terms))
	for i, t := range terms {
		words := make([]string, len(t.Words))
		for j, w := range t.Words {
			words[j] = w
			if t.Subject {
				words[j] += ":A"
			}
		}
		args[i] = strings.Join(words, " <-> ")
	}
	return args
}

// searchRow is a listed message with the head of its text for highlights.
type searchRow struct {
	messageRow
	Head string `db:"search_head"`
}

// highlightHead is how much of a hit's text its highlights are cut from.
const highlightHead = 16 << 10

var searchColumns = summaryColumns + fmt.Sprintf(", substr(email_messages.text_body, 1, %d) AS search_head", highlightHead)

// searchPage reads a page of hits in two steps: the ids, ranked and cut to
// the page, reading only the index and the ordering columns; then the
// page's rows with the heads of their texts. Ranking a word that most
// messages hold in one statement read every match's text first (10 s for
// 100,000 messages on SQLite).
func (db *DB) searchPage(ctx context.Context, from, order string, args []any) ([]searchRow, error) {
	var ids []int64
	if err := db.sel(ctx, &ids, db.q(`SELECT email_messages.id `+from+` ORDER BY `+order+` LIMIT ? OFFSET ?`), args...); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	in := make([]any, len(ids))
	for i, id := range ids {
		in[i] = id
	}
	var rows []searchRow
	err := db.sel(ctx, &rows, db.q(`SELECT `+searchColumns+` FROM email_messages WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`), in...)
	if err != nil {
		return nil, err
	}
	at := make(map[int64]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	sorted := make([]searchRow, len(ids))
	n := 0
	for _, r := range rows {
		sorted[at[r.ID]] = r
		n++
	}
	if n != len(ids) { // a hit deleted between the two reads
		kept := sorted[:0]
		for _, r := range sorted {
			if r.ID != 0 {
				kept = append(kept, r)
			}
		}
		sorted = kept
	}
	return sorted, nil
}
