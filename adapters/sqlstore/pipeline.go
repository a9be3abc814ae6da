package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/callsign/callsign/core"
)

// On PostgreSQL every statement is a round trip, and storing one message
// took about eight: the group commit's one goroutine spent its time
// waiting, not working. So a batch of mail is stored in two pipelines
// (pgx batches, sent at once and answered at once), whatever its size:
//
//  1. BEGIN, lock the batch's accounts (their clocks and event sequences),
//     then everything core.FileMail will ask of the database for the whole
//     batch (the threads of the Message-IDs it names, locked, and the
//     copies it may already hold), the batch's ids (messages and events,
//     drawn from their sequences: a write in a pipeline cannot wait for
//     RETURNING) and the accounts' webhooks;
//  2. every write the batch makes, the same statements as on SQLite
//     except the rows every message makes (its thread, message, source,
//     event and index row): one multi-row insert each for the whole batch
//     (rowSet), then COMMIT (in a third round trip when a write's result
//     must be checked first: an idempotency key's claim).
//
// Statements of a pipeline run in order, so the reads of the first see
// what was committed before the accounts were locked, as the one-at-a-time
// reads did. Arguments are cleaned as the connector cleans everyone's
// (cleanValue), and errors read as the connector's do (invalidInput).

// storeMailPipelined is storeMail on PostgreSQL.
func (db *DB) storeMailPipelined(ctx context.Context, mails []queuedMail) (out []core.EmailMessage, err error) {
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return nil, unreachable(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		pc := dc.(*cleanConn).Conn.(*stdlib.Conn).Conn()
		out, err = db.pipelineMail(ctx, pc, mails)
		if err != nil && !pc.IsClosed() && pc.PgConn().TxStatus() != 'I' {
			if _, rerr := pc.Exec(ctx, "ROLLBACK"); rerr != nil {
				return errors.Join(err, driver.ErrBadConn) // the pool drops the connection
			}
		}
		return err
	})
	return out, invalidInput(err)
}

// A batch runs generic plans (pipelineMail), which the plan cache keeps
// until the statistics of a table they read change. Made while
// email_messages and email_threads were young, the lookups by Message-ID
// were plans that scan them whole, and stayed so (a scan of the whole
// table per batch: 15% of the backends' CPU at 15,000 messages, in every
// database whose autovacuum lags or is off, as on the test server). So, as
// autovacuum would, the mail tables are analyzed when one has doubled
// since its statistics were taken and is past analyzeMailAt: each
// ANALYZE drops the cached plans, and those made next fit the table's
// size (with statistics of 300 messages and 2,000 threads the lookups
// probe the indexes), so a plan that scans is used on at most twice the
// table it was made for. A batch asks at most once every checkMailEvery.
// The search index is analyzed with them: without its statistics the
// planner guessed that one message in eight holds any word, and for a word
// in none walked every message, newest first, rather than ask the index
// (300 ms instead of 3 at 100,000 messages; a phrase 210 ms instead of 21).
const (
	analyzeMailAt  = 256 << 10
	checkMailEvery = time.Second
)

// mailCheckDue says whether this batch is to ask whether a mail table
// outgrew its statistics (mailOutgrown): none has asked for checkMailEvery.
func (db *DB) mailCheckDue() bool {
	now, last := time.Now().UnixNano(), db.mailChecked.Load()
	return now-last >= int64(checkMailEvery) && db.mailChecked.CompareAndSwap(last, now)
}

// mailOutgrown says whether a mail table is past $1 bytes and twice the
// size its statistics saw, and gives the larger table's size.
const mailOutgrown = `SELECT bool_or(pg_relation_size(oid) >= greatest($1, 2 * relpages::bigint * current_setting('block_size')::int)),
	max(pg_relation_size(oid)) FROM pg_class WHERE oid IN ('email_messages'::regclass, 'email_threads'::regclass, 'email_search'::regclass)`

// analyzeMail runs ANALYZE on the mail tables in the background, one at a
// time, and notes the size they had: the next waits for twice that, even
// where an ANALYZE leaves the statistics as they were (a role that does
// not own the tables is only warned). One that failed is tried again when
// a later batch asks. Close stops it.
func (db *DB) analyzeMail(size int64) {
	if !db.analyzing.CompareAndSwap(false, true) {
		return
	}
	db.mailAnalyzedSize.Store(size)
	db.background.Add(1)
	go func() {
		defer db.background.Done()
		defer db.analyzing.Store(false)
		ctx, cancel := context.WithTimeout(db.closing, time.Minute)
		defer cancel()
		if _, err := db.w.ExecContext(ctx, "ANALYZE email_messages, email_threads, email_search"); err != nil {
			db.mailAnalyzedSize.Store(0)
		}
	}()
}

func (db *DB) pipelineMail(ctx context.Context, pc *pgx.Conn, mails []queuedMail) ([]core.EmailMessage, error) {
	accounts := accountsOf(mails)
	asked := questionsOf(mails)
	pre := &prefetched{threadOf: map[indexKey]string{}, received: map[indexKey]core.EmailMessage{}, threads: map[string]core.Thread{}}
	type lock struct{ clock, eventSeq int64 }
	locks := make([]lock, len(accounts))
	var messageIDs, eventIDs []int64
	hooks := map[string][]core.Webhook{}
	var found []messageRow // copies already received, read whole (wholeMessages) once the batch is read

	var reads pgx.Batch
	reads.Queue("BEGIN")
	// Planned once per connection, not per batch: the plan cache chose a
	// custom plan for each multi-row insert, the batch's few rows looking
	// cheaper than the generic plan's guess of ten. The lookups' generic
	// plans fit the tables as analyzeMail keeps their statistics.
	reads.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
	for i, a := range accounts {
		reads.Queue(`SELECT mail_clock, event_seq FROM accounts WHERE id = $1 FOR UPDATE`, clean(a)).QueryRow(func(row pgx.Row) error {
			return notFound(row.Scan(&locks[i].clock, &locks[i].eventSeq), "Account")
		})
	}
	if db.mailCheckDue() {
		reads.Queue(mailOutgrown, max(analyzeMailAt, 2*db.mailAnalyzedSize.Load())).QueryRow(func(row pgx.Row) error {
			var outgrown bool
			var size int64
			err := row.Scan(&outgrown, &size)
			if err == nil && outgrown {
				db.analyzeMail(size)
			}
			return err
		})
	}
	if len(asked.threadOf.ids) > 0 {
		// The newest message of each Message-ID asked for, and its thread,
		// locked: one statement, the lookup made once.
		reads.Queue(`SELECT key_inbox, key_message_id, `+threadColumns+` FROM email_threads JOIN (
			SELECT DISTINCT ON (inbox_id, message_id) inbox_id, message_id, thread_id FROM email_messages
			WHERE (inbox_id, message_id) IN (SELECT * FROM unnest($1::bigint[], $2::text[]))
			ORDER BY inbox_id, message_id, id DESC) AS k (key_inbox, key_message_id, key_thread) ON id = key_thread
			ORDER BY id FOR UPDATE OF email_threads`, asked.threadOf.inboxes, asked.threadOf.ids).Query(func(rows pgx.Rows) error {
			type threadOf struct {
				threadRow
				KeyInbox     int64  `db:"key_inbox"`
				KeyMessageID string `db:"key_message_id"`
			}
			ts, err := pgx.CollectRows(rows, pgx.RowToStructByNameLax[threadOf])
			for _, t := range ts {
				pre.threadOf[indexKey{t.KeyInbox, t.KeyMessageID}] = t.ID
				pre.threads[t.ID] = t.core()
			}
			return err
		})
	}
	if len(asked.received.ids) > 0 {
		reads.Queue(`SELECT DISTINCT ON (inbox_id, message_id) `+messageColumns+` FROM email_messages
			WHERE direction = 'incoming' AND (inbox_id, message_id) IN (SELECT * FROM unnest($1::bigint[], $2::text[]))
			ORDER BY inbox_id, message_id, id DESC`, asked.received.inboxes, asked.received.ids).Query(func(rows pgx.Rows) error {
			var err error
			found, err = pgx.CollectRows(rows, pgx.RowToStructByNameLax[messageRow])
			return err
		})
	}
	reads.Queue(`SELECT nextval(pg_get_serial_sequence('email_messages', 'id')), nextval(pg_get_serial_sequence('events', 'id'))
		FROM generate_series(1, $1)`, len(mails)).Query(func(rows pgx.Rows) error {
		var message, event int64
		_, err := pgx.ForEachRow(rows, []any{&message, &event}, func() error {
			messageIDs, eventIDs = append(messageIDs, message), append(eventIDs, event)
			return nil
		})
		return err
	})
	reads.Queue(`SELECT `+webhookColumns+` FROM webhooks WHERE account_id = ANY($1::text[]::uuid[]) AND enabled`, accounts).
		Query(func(rows pgx.Rows) error {
			ws, err := pgx.CollectRows(rows, pgx.RowToStructByNameLax[webhookRow])
			for _, w := range ws {
				hooks[w.AccountID] = append(hooks[w.AccountID], w.core().Webhook)
			}
			return err
		})
	if err := pc.SendBatch(ctx, &reads).Close(); err != nil {
		return nil, err
	}
	if len(found) > 0 {
		msgs, err := db.wholeMessages(ctx, pgxSelector(pc), found)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			pre.received[keyOf(m.InboxID, m.MessageID)] = m
		}
	}

	pipe := &pipeline{}
	// Threads first, then messages: each row's parent is inserted before it.
	pipe.rows(insertThreads)
	pipe.rows(insertMessages)
	mt := newMailTx(ctx, db, pipe, pre)
	mt.ids = messageIDs
	next := map[string]int64{}
	for i, a := range accounts {
		mt.clocks[a] = fromUS(locks[i].clock)
		next[a] = locks[i].eventSeq + 1
		if _, ok := hooks[a]; !ok {
			hooks[a] = nil // none: nothing to read
		}
	}
	out, err := mt.saveAll(mails)
	if err != nil {
		return nil, err
	}
	counts := eventsPerAccount(mt.events)
	for i, a := range accounts {
		pipe.ExecContext(ctx, db.q(`UPDATE accounts SET mail_clock = ?, event_seq = ? WHERE id = ?`),
			us(mt.clocks[a]), locks[i].eventSeq+counts[a], a)
	}
	if err := mt.writeThreads(); err != nil {
		return nil, err
	}
	if len(mt.events) > 0 {
		if err := db.insertEvents(ctx, pipe, mt.events, next, eventIDs, hooks); err != nil {
			return nil, err
		}
	}
	if err := mt.writeIndex(); err != nil {
		return nil, err
	}
	if pipe.checked {
		// A check happens here, not in the database: COMMIT waits for it.
		if err := pipe.send(ctx, pc); err != nil {
			return nil, err
		}
	}
	pipe.batch.Queue("COMMIT")
	return out, pipe.send(ctx, pc)
}

// pipeline queues a transaction's writes into one pgx batch. It answers
// ExecContext with no result (nothing in a pipeline is known before it is
// sent); a write that must touch a row says so with execTouching.
type pipeline struct {
	batch pgx.Batch
	// checked says a write's result is checked (queueTouching), so the commit
	// must wait for its answer.
	checked bool
	// inserts are the multi-row inserts queued; open, by statement, the
	// one its rows go to.
	inserts []*rowSet
	open    map[string]*rowSet
}

// rowSet is one multi-row INSERT of a pipeline, whose arguments are an
// array per column (unnested): one statement for a batch's rows of a
// table rather than one per row, each of which cost PostgreSQL an
// executor start-up, a plan lookup and its protocol messages (with the
// statement-level storage trigger of migration 00052, also an update of
// the account's row per message).
type rowSet struct {
	query   *pgx.QueuedQuery
	columns [][]any
	bytes   int // of its text and binary values
}

// rows is the multi-row insert query of the pipeline, queued where it is
// first asked for: rows added later are inserted there.
func (p *pipeline) rows(query string) *rowSet {
	if rs, ok := p.open[query]; ok {
		return rs
	}
	if p.open == nil {
		p.open = map[string]*rowSet{}
	}
	rs := &rowSet{query: p.batch.Queue(query)}
	p.inserts = append(p.inserts, rs)
	p.open[query] = rs
	return rs
}

// maxRowSetBytes bounds a multi-row insert of sources: PostgreSQL takes
// no value of 1 GB or more, an array included, and one call may store a
// large message for many recipients.
var maxRowSetBytes = 64 << 20

// sourceRows is rows for a table whose rows may be large (sources): when
// the open insert holds maxRowSetBytes, another is queued here. Only rows
// whose parents are inserted before may go to a later statement, so the
// others (messages, threads) are never split; their values are bounded
// (core.MaxStoredBody), and a batch too large for one statement fails
// and is stored call by call (groupCommit).
func (p *pipeline) sourceRows(query string) *rowSet {
	if rs, ok := p.open[query]; ok && rs.bytes >= maxRowSetBytes {
		delete(p.open, query)
	}
	return p.rows(query)
}

// add adds a row, its values in the order of the query's arrays.
func (rs *rowSet) add(values ...any) {
	if rs.columns == nil {
		rs.columns = make([][]any, len(values))
	}
	for i, v := range values {
		v = clean(v)
		if valuer, ok := v.(driver.Valuer); ok { // a null sql.Null*: pgx encodes none inside an array
			v, _ = valuer.Value()
		}
		switch v := v.(type) {
		case string:
			rs.bytes += len(v)
		case []byte:
			rs.bytes += len(v)
		}
		rs.columns[i] = append(rs.columns[i], v)
	}
}

// send sends what is queued and reads the answers: the multi-row inserts
// get their arrays, and those given no row are left out.
func (p *pipeline) send(ctx context.Context, pc *pgx.Conn) error {
	empty := map[*pgx.QueuedQuery]bool{}
	for _, rs := range p.inserts {
		if rs.columns == nil {
			empty[rs.query] = true
			continue
		}
		rs.query.Arguments = make([]any, len(rs.columns))
		for i, c := range rs.columns {
			rs.query.Arguments[i] = c
		}
	}
	p.batch.QueuedQueries = slices.DeleteFunc(p.batch.QueuedQueries, func(q *pgx.QueuedQuery) bool { return empty[q] })
	err := pc.SendBatch(ctx, &p.batch).Close()
	p.batch, p.inserts, p.open = pgx.Batch{}, nil, nil
	return err
}

func (p *pipeline) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	p.batch.Queue(query, cleanAll(args)...)
	return nil, nil
}

// GetContext is refused: a pipelined write cannot wait for what it returns.
func (p *pipeline) GetContext(context.Context, any, string, ...any) error {
	return errors.New("sqlstore: a pipelined write cannot return a value")
}

// queueTouching queues a write that must touch a row, failing with none
// when it touches none.
func (p *pipeline) queueTouching(none error, query string, args ...any) {
	p.checked = true
	p.batch.Queue(query, cleanAll(args)...).Exec(func(tag pgconn.CommandTag) error {
		if tag.RowsAffected() == 0 {
			return none
		}
		return nil
	})
}

// clean is v as the connector would send it.
func clean(v any) any {
	c, _ := cleanValue(v)
	return c
}

func cleanAll(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = clean(a)
	}
	return out
}

// questions are what core.FileMail will ask the database while filing a
// batch, found by asking it with an index that finds nothing (so every
// question is asked): the Message-IDs whose thread it looks for, and those
// whose received copy it looks for.
type questions struct {
	threadOf, received keyList
}

// keyList holds index keys as the two arrays a query unnests.
type keyList struct {
	inboxes []int64
	ids     []string
}

func (l *keyList) add(inboxID int64, messageID string) {
	k := keyOf(inboxID, messageID)
	l.inboxes, l.ids = append(l.inboxes, k.inbox), append(l.ids, k.messageID)
}

func (q *questions) ThreadOf(inboxID int64, messageID string) (string, bool, error) {
	q.threadOf.add(inboxID, messageID)
	return "", false, nil
}

func (q *questions) Received(inboxID int64, messageID string) (core.EmailMessage, bool, error) {
	q.received.add(inboxID, messageID)
	return core.EmailMessage{}, false, nil
}

func questionsOf(mails []queuedMail) *questions {
	q := &questions{}
	for _, nm := range mails {
		core.FileMail(nm.Message, nm.Dedupe, "", time.Time{}, q) // finds nothing, so it cannot fail
	}
	return q
}

// prefetched answers storedMail from what the first pipeline read.
type prefetched struct {
	threadOf map[indexKey]string
	received map[indexKey]core.EmailMessage
	threads  map[string]core.Thread
}

func (p *prefetched) ThreadOf(inboxID int64, messageID string) (string, bool, error) {
	t, ok := p.threadOf[keyOf(inboxID, messageID)]
	return t, ok, nil
}

func (p *prefetched) Received(inboxID int64, messageID string) (core.EmailMessage, bool, error) {
	m, ok := p.received[keyOf(inboxID, messageID)]
	return m, ok, nil
}

func (p *prefetched) thread(id string) (core.Thread, error) {
	t, ok := p.threads[id]
	if !ok {
		return t, fmt.Errorf("sqlstore: thread %s was not read with its batch", id)
	}
	return t, nil
}

// pgxSelector reads rows on a pgx connection into the row types
// wholeMessages asks for.
func pgxSelector(pc *pgx.Conn) selector {
	return func(ctx context.Context, dest any, query string, args ...any) error {
		switch d := dest.(type) {
		case *[]attachmentRow:
			return collect(ctx, pc, d, query, args)
		case *[]rawRow:
			return collect(ctx, pc, d, query, args)
		case *[]labelRow:
			return collect(ctx, pc, d, query, args)
		}
		return fmt.Errorf("sqlstore: pgxSelector cannot read into %T", dest)
	}
}

// collect reads the rows of query into dest, by column name.
func collect[T any](ctx context.Context, pc *pgx.Conn, dest *[]T, query string, args []any) error {
	rows, err := pc.Query(ctx, query, cleanAll(args)...)
	if err != nil {
		return err
	}
	*dest, err = pgx.CollectRows(rows, pgx.RowToStructByNameLax[T])
	return err
}
