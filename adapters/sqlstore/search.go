package sqlstore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
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

// searchBody is what the index reads of a message besides its subject: its
// text body, cut at searchBodyLimit, and more (its text attachments' text).
func searchBody(text, more string) string {
	body := cutText(text, searchBodyLimit)
	if more != "" {
		body += "\n" + more
	}
	return body
}

// searchDocumentOf is, on PostgreSQL, the index's document of a message on
// its way to be stored, made by the caller, as its source is compressed,
// rather than by the writer inside the accounts' locks; "" on SQLite, whose
// FTS5 reads the text itself.
func (db *DB) searchDocumentOf(nm ports.NewMail) string {
	if db.dialect != Postgres {
		return ""
	}
	return englishDocument(nm.Message.Subject, searchBody(nm.Message.Text, nm.SearchText))
}

// indexMessage writes the index row of im's message in the transaction
// that stores it.
func (db *DB) indexMessage(ctx context.Context, tx execer, im indexedMail) error {
	m := im.message
	if db.dialect == Postgres {
		if p, ok := tx.(*pipeline); ok {
			p.rows(`INSERT INTO email_search (email_id, doc) SELECT id, doc::tsvector FROM unnest($1::bigint[], $2::text[]) AS r (id, doc)`).
				add(m.ID, im.document)
			return nil
		}
		_, err := tx.ExecContext(ctx, db.q(`INSERT INTO email_search (email_id, doc) VALUES (?, ?::tsvector)`), m.ID, im.document)
		return err
	}
	_, err := tx.ExecContext(ctx, db.q(`INSERT INTO email_search (rowid, search_subject, search_body) VALUES (?, ?, ?)`),
		m.ID, m.Subject, searchBody(m.Text, im.searchText))
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

// textIndex is one full-text index over the rows of one table: mail
// (migration 00016), texts and contacts (00022). On SQLite an FTS5 table
// whose rowid is the indexed row's rowid (the id of mail and texts); on
// PostgreSQL a table of (key, doc tsvector) with a GIN index.
type textIndex struct {
	table      string // the indexed rows
	key        string // their id column
	fts        string // SQLite: the FTS5 table
	rowid      string // SQLite: the column of table that the FTS5 rowid equals
	bm25       string // SQLite: bm25's column weights ("" for none)
	subjectCol string // SQLite: the FTS5 column subject: terms are limited to
	pg         string // PostgreSQL: the index table
	pgKey      string // PostgreSQL: its column holding the row's key
	config     string // PostgreSQL: the text search configuration
	// recentPG orders rows newest first on PostgreSQL (SQLite follows
	// the FTS5 rowid, which rows take in order of arrival).
	recentPG string
}

var (
	mailIndex = textIndex{table: "email_messages", key: "email_messages.id", fts: "email_search", rowid: "email_messages.id",
		bm25: ", 4.0, 1.0", subjectCol: "search_subject", pg: "email_search", pgKey: "email_id", config: "english",
		recentPG: "email_messages.id"}
	textsIndex = textIndex{table: "sms_messages", key: "sms_messages.id", fts: "sms_search", rowid: "sms_messages.id",
		pg: "sms_search", pgKey: "sms_id", config: "english", recentPG: "sms_messages.id"}
	contactsIndex = textIndex{table: "contacts", key: "contacts.id", fts: "contact_search", rowid: "contacts.rowid",
		pg: "contact_search", pgKey: "contact_id", config: "simple", recentPG: "contacts.created_at"}
)

// searchSQL is a query's part of a list: what joins the index (with its
// arguments) and how hits are scored and told newest.
type searchSQL struct {
	join     string
	joinArgs []any
	score    string // lower is more relevant; "" without words to rank
	recent   string // a key that is larger for newer rows
	// newest orders rows newest first: by recent, and by the row's key
	// where recent can tie. SQLite's rowids never tie, and one ORDER BY
	// term is what lets FTS5 hand over rows in its own order and stop.
	newest string
}

// textSearch adds q's words and dates to w and returns the join, score
// and recency of ix; the caller adds its own filters (from:, is:unread…).
func (db *DB) textSearch(ix textIndex, q core.SearchQuery, w *where) searchSQL {
	var s searchSQL
	pos, neg := q.Positive(), q.Negative()
	if db.dialect == Postgres {
		s.recent, s.newest = ix.recentPG, ix.recentPG+" DESC"
		if ix.recentPG != ix.key {
			s.newest += ", " + ix.key + " DESC"
		}
		if len(pos) > 0 {
			s.join = ` JOIN ` + ix.pg + ` ON ` + ix.pg + `.` + ix.pgKey + ` = ` + ix.key + `, (SELECT ` + ix.tsquery(pos) + ` AS tsq) search`
			s.joinArgs = tsqueryArgs(pos)
			w.add(ix.pg + ".doc @@ search.tsq")
			s.score = "-ts_rank(" + ix.pg + ".doc, search.tsq)"
		}
		if len(neg) > 0 {
			w.add(`NOT EXISTS (SELECT 1 FROM `+ix.pg+` n WHERE n.`+ix.pgKey+` = `+ix.key+` AND n.doc @@ (`+ix.tsquery(neg)+`))`,
				tsqueryArgs(neg)...)
		}
	} else {
		s.recent = ix.rowid
		if len(pos) > 0 {
			s.join = ` JOIN ` + ix.fts + ` ON ` + ix.fts + `.rowid = ` + ix.rowid
			w.add(ix.fts+" MATCH ?", ix.ftsMatch(pos))
			s.score = "bm25(" + ix.fts + ix.bm25 + ")"
			// The index's own order lets FTS5 hand over the newest matches
			// first and stop (rankedIDs).
			s.recent = ix.fts + ".rowid"
		}
		// FTS5's NOT needs a left side; each excluded term is its own look-up.
		for _, t := range neg {
			w.add(ix.rowid+" NOT IN (SELECT rowid FROM "+ix.fts+" WHERE "+ix.fts+" MATCH ?)", ix.ftsMatch([]core.SearchTerm{t}))
		}
	}
	if db.dialect == SQLite {
		s.newest = s.recent + " DESC"
	}
	if q.After != nil {
		w.add(ix.table+".created_at >= ?", us(*q.After))
	}
	if q.Before != nil {
		w.add(ix.table+".created_at < ?", us(*q.Before))
	}
	return s
}

// messageSearch adds q's conditions on mail to w.
func (db *DB) messageSearch(q core.SearchQuery, w *where) searchSQL {
	s := db.textSearch(mailIndex, q, w)
	for _, f := range q.From {
		w.add(db.contains("from_email"), likeContains(f))
	}
	for _, t := range q.To {
		w.add(`(`+db.contains("to_addrs")+` OR `+db.contains("cc_addrs")+`)`, likeContains(t), likeContains(t))
	}
	if q.HasAttachment {
		w.add(`EXISTS (SELECT 1 FROM attachments a WHERE a.message_id = email_messages.id AND a.inline = ?)`, false)
	}
	for _, name := range q.Filenames {
		w.add(`EXISTS (SELECT 1 FROM attachments a WHERE a.message_id = email_messages.id AND lower(a.filename) LIKE ? ESCAPE '\')`,
			likeContains(name))
	}
	if q.Unread {
		w.add("email_messages.is_read = ?", false)
	}
	return s
}

// contains is a condition that column holds a likeContains pattern (one
// argument), ignoring case. PostgreSQL's ILIKE lower-cases both sides as
// lower() does, and names the column itself, so the planner judges how
// many rows match from the column's statistics; for lower(column) it has
// none and guessed a sender every message had at a few dozen rows in a
// million, scanning the table and scoring every match (7 s).
func (db *DB) contains(column string) string {
	if db.dialect == Postgres {
		return column + ` ILIKE ? ESCAPE '\'`
	}
	return `lower(` + column + `) LIKE ? ESCAPE '\'`
}

// rankWindow is how many of a search's newest matches are ranked by
// relevance; the matches beyond them follow, newest first. A score is
// computed for every row that is ordered by it, so ranking all matches
// costs as much as the word is common (2.6–3.5 s for a word in 100,000
// messages on SQLite); the window bounds any query near the cost of
// finding and scoring 1,000 matches.
var rankWindow = 1000 // a variable for the tests of the rule only

// rankedIDs are the keys of one page of a search's hits (from: its FROM
// and WHERE clauses, with args): the newest rankWindow matches ordered by
// relevance, then newest, and after them the rest newest first; all newest
// first when newestFirst is set or there are no words to rank.
//
// window is how many matches it read newest first, up to rankWindow, to
// rank them or cut the page from (fewer: that is every match), or -1
// where it read none so (newest first, but for PostgreSQL's pages within
// the window) or the page is empty.
func rankedIDs[K any](ctx context.Context, db *DB, ix textIndex, s searchSQL, from string, args []any, newestFirst bool, offset, limit int) (
	ids []K, window int, err error) {
	recent := func(offset, limit int) ([]K, error) {
		var ids []K
		err := db.sel(ctx, &ids, db.q(`SELECT `+ix.key+` `+from+` ORDER BY `+s.newest+` LIMIT ? OFFSET ?`),
			append(slices.Clip(args), limit, offset)...)
		return ids, err
	}
	if db.dialect == Postgres && s.score != "" && newestFirst && offset+limit <= rankWindow {
		// PostgreSQL picks between walking the newest rows and the GIN
		// index by the LIMIT and its guess of how common the words are;
		// for a page of 50 it walked every row for a word in none (170
		// ms at 100,000 messages, against 0.5 ms from the index), while
		// for the window it judges both kinds of word well; and the
		// window tells the page's bounded count.
		ids, err := recent(0, rankWindow)
		return ids[min(offset, len(ids)):min(offset+limit, len(ids))], len(ids), err
	}
	if s.score == "" || newestFirst || offset >= rankWindow {
		ids, err := recent(offset, limit)
		return ids, -1, err
	}
	var ranked []struct {
		ID      K   `db:"id"`
		Matched int `db:"matched"` // the window's rows
	}
	err = db.sel(ctx, &ranked, db.q(`SELECT id, COUNT(*) OVER () AS matched FROM (SELECT `+ix.key+` AS id, `+s.recent+` AS recent, `+
		s.score+` AS score `+from+` ORDER BY `+s.newest+` LIMIT ?) AS newest ORDER BY score, recent DESC, id DESC LIMIT ? OFFSET ?`),
		append(slices.Clip(args), rankWindow, limit, offset)...)
	window = -1 // unknown from an empty page
	for i, r := range ranked {
		ids, window = append(ids, r.ID), ranked[i].Matched
	}
	if err != nil || len(ids) == limit || offset+len(ids) < rankWindow {
		return ids, window, err
	}
	// The page runs past the window: the rest of it is the newest of what
	// the window left out.
	more, err := recent(rankWindow, limit-len(ids))
	return append(ids, more...), window, err
}

// windowCount is a search page's count told by the window of matches it
// was cut from (rankedIDs), if that tells it: every match when the window
// is short, else upTo when a bounded count stops within the window.
func windowCount(window, upTo int) (int, bool) {
	switch {
	case window < 0:
		return 0, false
	case window < rankWindow:
		return window, true
	case upTo > 0 && upTo <= rankWindow:
		return upTo, true
	}
	return 0, false
}

// ftsMatch is an FTS5 query of terms, all required: each a quoted phrase
// (a word is a phrase of one), the subject's limited to its column.
func (ix textIndex) ftsMatch(terms []core.SearchTerm) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		p := `"` + strings.Join(t.Words, " ") + `"`
		if t.Subject {
			p = ix.subjectCol + " : " + p
		}
		parts[i] = p
	}
	return strings.Join(parts, " AND ")
}

// planned is args of a PostgreSQL read, led, for a statement that reads a
// text index, by pgx's mode that plans it for its arguments each time (an
// unnamed statement) rather than keep it prepared. Kept, PostgreSQL plans
// the statement for its words five times and then may settle on a generic
// plan, which cannot know whether they are common: for the search of the
// newest ranked matches that plan walked every message for a word in none
// (230 ms at 100,000 messages, against 3 ms planned for the word).
func (db *DB) planned(query string, args []any) []any {
	if db.dialect != Postgres || !strings.Contains(query, "to_tsquery(") {
		return args
	}
	return append([]any{pgx.QueryExecModeCacheDescribe}, args...)
}

// tsquery is a PostgreSQL tsquery of terms, all required, each built by
// to_tsquery from one bound argument (tsqueryArgs).
func (ix textIndex) tsquery(terms []core.SearchTerm) string {
	parts := make([]string, len(terms))
	for i := range terms {
		parts[i] = "to_tsquery('" + ix.config + "', ?)"
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

// rowsInOrder reads the rows of ids (columns of table, whose key is id)
// in the order of ids: a page of hits is read in two steps, the keys
// ranked and cut to the page, touching only the index and the ordering
// columns, then those rows with the text their highlights are cut from.
// A row deleted between the two reads is left out.
func rowsInOrder[K comparable, R any](ctx context.Context, db *DB, columns, table string, ids []K, key func(R) K) ([]R, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in := make([]any, len(ids))
	at := make(map[K]int, len(ids))
	for i, id := range ids {
		in[i], at[id] = id, i
	}
	var rows []R
	err := db.sel(ctx, &rows, db.q(`SELECT `+columns+` FROM `+table+` WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`), in...)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rows, func(a, b R) int { return at[key(a)] - at[key(b)] })
	return rows, nil
}

// searchTexts is a page of the texts of w that q matches, with highlights.
func (db *DB) searchTexts(ctx context.Context, q core.SearchQuery, w where, page ports.Page) ([]core.SMSMessage, int, error) {
	s := db.textSearch(textsIndex, q, &w)
	for _, f := range q.From {
		w.add(db.contains("from_number"), likeContains(f))
	}
	for _, t := range q.To {
		w.add(db.contains("to_number"), likeContains(t))
	}
	if q.Unread {
		w.add("sms_messages.is_read = ?", false)
	}
	rows, total, err := searchPage[int64](ctx, db, textsIndex, s, w, page, smsColumns, func(r smsRow) int64 { return r.ID })
	list := make([]core.SMSMessage, len(rows))
	for i, r := range rows {
		list[i] = r.core()
		list[i].Highlights = core.Highlights(q, core.SearchTexts, "", r.Body)
	}
	return list, total, err
}

// searchContacts is a page of the contacts of w that q matches, with
// highlights of their names, email and number.
func (db *DB) searchContacts(ctx context.Context, q core.SearchQuery, w where, page ports.Page) ([]core.Contact, int, error) {
	s := db.textSearch(contactsIndex, q, &w)
	rows, total, err := searchPage[string](ctx, db, contactsIndex, s, w, page, contactColumns, func(r contactRow) string { return r.ID })
	list := make([]core.Contact, len(rows))
	for i, r := range rows {
		list[i] = r.core()
		list[i].Highlights = core.Highlights(q, core.SearchContacts, "", list[i].SearchTexts()...)
	}
	return list, total, err
}

// searchPage is one page of the hits of a search s over ix narrowed by w,
// the rows read with columns, and (when the page asks) their count.
func searchPage[K comparable, R any](ctx context.Context, db *DB, ix textIndex, s searchSQL, w where, page ports.Page,
	columns string, key func(R) K) ([]R, int, error) {
	from := `FROM ` + ix.table + s.join + w.sql()
	args := append(slices.Clip(s.joinArgs), w.args...)
	limit := page.Limit
	if limit <= 0 { // every hit
		limit = math.MaxInt32
	}
	ids, window, err := rankedIDs[K](ctx, db, ix, s, from, args, false, page.Offset, limit+1)
	if err != nil {
		return nil, 0, err
	}
	read := len(ids) // one past the page tells that another follows (pageCount)
	ids = ids[:min(read, limit)]
	total := 0
	if n, told := windowCount(window, page.CountUpTo); page.Count && told {
		total = n
	} else if page.Count {
		if total, err = db.pageCount(ctx, from, args, page.CountUpTo, s.newest, page.Offset, limit, read); err != nil {
			return nil, 0, err
		}
	}
	rows, err := rowsInOrder(ctx, db, columns, ix.table, ids, key)
	return rows, total, err
}
