// Package sqlstore is the SQL implementation of every store port, over sqlx,
// for two dialects: an embedded SQLite database (modernc.org/sqlite, pure Go)
// and PostgreSQL (pgx's database/sql driver). One set of queries serves both:
// placeholders are written as '?' and rebound, times are stored as integer
// microseconds since the epoch (exact, sortable, the same in both), and the
// few statements that must differ are chosen by dialect.
package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"modernc.org/sqlite"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Dialect names the SQL flavour behind a DB.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

//go:embed migrations
var migrations embed.FS

func init() {
	// sqlx knows pgx's bind style but not modernc's driver name.
	sqlx.BindDriver("sqlite", sqlx.QUESTION)
}

// DB is the SQL store. SQLite gets one writing connection (SQLite has one
// writer at a time anyway; a single connection turns lock contention into a
// queue) beside a pool of read-only connections that WAL lets run alongside
// it. PostgreSQL uses one pool for both.
//
// The speed machinery has rooms of its own: the group commit of SaveMail
// (groupcommit.go), the statement caches (stmtcache.go) and the WAL
// checkpointer (checkpoint.go).
type DB struct {
	dialect Dialect
	w       *sqlx.DB // writes and transactions
	r       *sqlx.DB // reads
	// mail lets concurrent SaveMail calls share a transaction.
	mail *groupCommit[queuedMail, core.EmailMessage]
	// reads and writes keep prepared statements on SQLite; nil on PostgreSQL.
	reads, writes *stmtCache
	// checkpoints copies SQLite's WAL back; nil on PostgreSQL.
	checkpoints *checkpointer
	// mailChecked is when a batch last asked whether PostgreSQL's
	// statistics of the mail tables are out of date (pipelineMail), in
	// Unix nanoseconds; mailAnalyzedSize the larger table's size when this
	// DB last analyzed them; analyzing says an ANALYZE of them runs, which
	// background tracks and Close cancels through closing.
	mailChecked, mailAnalyzedSize atomic.Int64
	analyzing                     atomic.Bool
	background                    sync.WaitGroup
	closing                       context.Context
	stopBackground                context.CancelFunc
	// parser reads received mail's HTML back from its source; nil: every
	// body is stored (Options.Parser).
	parser ports.MailParser

	// The event log (events.go): how subjects become data, the signal of
	// committed events, and on PostgreSQL the listener that gives it.
	encodeEvent   ports.EventEncoder
	written       chan struct{}
	url           string // PostgreSQL's, for the listener's own connection
	listenOnce    sync.Once
	stopListening context.CancelFunc
	listening     sync.WaitGroup
}

// Options tune Open.
type Options struct {
	// ReadConns bounds the SQLite read pool; 0 means a default.
	ReadConns int
	// CommitBatch, when set, hears how many SaveMail calls each group
	// commit stored (for metrics).
	CommitBatch func(calls int)
	// WALRestart, when set, hears how long each restart of SQLite's log
	// held the writer (for metrics).
	WALRestart func(held time.Duration)
	// EventData renders events' data (the API's views); nil means plain
	// JSON of the subject, for store tests.
	EventData ports.EventEncoder
	// Parser, when set, lets received mail be stored without its HTML body
	// (ports.NewMail.HTMLInRaw): reading one message reads it back from the
	// source. Nil stores every body, for tools and store tests.
	Parser ports.MailParser
}

// Open connects to databaseURL: a postgres:// or postgresql:// URL, or a
// SQLite file path (or file: URI). It does not migrate; call Migrate.
func Open(ctx context.Context, databaseURL string, opts Options) (*DB, error) {
	var db *DB
	var err error
	if IsPostgresURL(databaseURL) {
		db, err = openPostgres(databaseURL)
	} else {
		db, err = openSQLite(databaseURL, opts)
	}
	if err != nil {
		return nil, err
	}
	db.mail.committed = opts.CommitBatch
	db.url = databaseURL
	db.parser = opts.Parser
	if db.encodeEvent = opts.EventData; db.encodeEvent == nil {
		db.encodeEvent = defaultEventData
	}
	if err := db.Ping(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to the %s database: %w", db.dialect, err)
	}
	return db, nil
}

// IsPostgresURL reports whether a database URL selects PostgreSQL.
func IsPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// pgSessionDefaults are settings of the service's PostgreSQL sessions
// where the database URL does not set them. Its queries are short and many
// run at once, and at 1,000,000 messages both features cost more than they
// saved: a parallel plan's workers took 6–10 ms to start for a search that
// alone takes 0.3 ms, and JIT compilation took 60–100 ms on plans the
// planner misjudged as large. An exact count (count=exact) runs on one core.
var pgSessionDefaults = [][2]string{{"jit", "off"}, {"max_parallel_workers_per_gather", "0"}}

// withSessionDefaults is u with each of pgSessionDefaults that u does not
// set added as a run-time parameter (pgx sends unknown URL parameters as
// settings at connection start).
func withSessionDefaults(u string) (string, error) {
	parsed, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("the database URL: %w", err)
	}
	q := parsed.Query()
	for _, kv := range pgSessionDefaults {
		if !q.Has(kv[0]) {
			q.Set(kv[0], kv[1])
		}
	}
	parsed.RawQuery = q.Encode()
	return parsed.String(), nil
}

func openPostgres(u string) (*DB, error) {
	u, err := withSessionDefaults(u)
	if err != nil {
		return nil, err
	}
	pool, err := cleanDB("pgx", u)
	if err != nil {
		return nil, err
	}
	db := sqlx.NewDb(pool, "pgx")
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return newDB(Postgres, db, db), nil
}

// newDB is a DB over its pools, with its group commit running.
func newDB(d Dialect, w, r *sqlx.DB) *DB {
	db := &DB{dialect: d, w: w, r: r, written: make(chan struct{}, 1)}
	db.closing, db.stopBackground = context.WithCancel(context.Background())
	db.mail = newGroupCommit(maxMailBatch, db.storeMail)
	if d == SQLite {
		db.reads, db.writes = &stmtCache{pool: r}, &stmtCache{pool: w}
		db.mail.arrivalWait = sqliteArrivalWait
	}
	return db
}

// busyTimeoutMS is how long a SQLite connection waits for a lock.
const busyTimeoutMS = "10000"

// sqlitePragmas make every connection durable (synchronous=FULL: an
// acknowledged write survives power loss) and safe (foreign keys on). The
// writer does not checkpoint the WAL itself (wal_autocheckpoint=0): a
// background checkpointer does (checkpoint.go), so commits never pay for
// copying pages; when the log starts over the writer cuts the file back to
// walRestartAt (journal_size_limit).
const sqlitePragmas = "_pragma=busy_timeout(" + busyTimeoutMS + ")&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"

// newPageSize is the page size of a database created here (a database
// keeps the size it was created with). SQLite keeps a row whole in its
// leaf page up to nearly a page, and spills a longer one into overflow
// pages it fills exactly; so a row of more than half a page and less than
// a page fills a page alone. With 4 KiB pages a message row (its text
// body and fields, 2–4 KB for a 5 KB message) left 1.8 KB of its page
// unused; with 2 KiB pages it spills, and a 5 KB message takes 11.1 KB
// on disk, all tables included, instead of 12.6 KB (docs/perf/2026-11-issue-12-sqlite-ingest.md).
const newPageSize = 2048

// prepareSQLite puts the database file in WAL mode on one connection
// before any pool or the checkpointer opens it: a file in rollback mode (a
// restored VACUUM INTO copy) is otherwise converted by whichever connection
// comes first, and another opening at that moment fails with SQLITE_BUSY.
// An empty file first gets its page size, which its header (written by
// journal_mode=WAL) then fixes: the DSN's pragmas cannot, as the driver
// runs them in alphabetical order.
func prepareSQLite(file string, empty bool) error {
	pool, err := sql.Open("sqlite", file+"?_pragma=busy_timeout("+busyTimeoutMS+")")
	if err != nil {
		return err
	}
	defer pool.Close()
	ctx := context.Background()
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if empty {
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d", newPageSize)); err != nil {
			return err
		}
	}
	_, err = conn.ExecContext(ctx, "PRAGMA journal_mode = WAL")
	return err
}

func openSQLite(path string, opts Options) (*DB, error) {
	path = strings.TrimPrefix(path, "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		return nil, fmt.Errorf("SQLite path %q: options in the path are not supported", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating the database directory: %w", err)
		}
	}
	// The database holds the account data: only its owner may read it.
	// SQLite creates the -wal and -shm files with the database file's mode;
	// files an earlier version created are narrowed too.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the database file: %w", err)
	}
	info, err := f.Stat()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("opening the database file: %w", err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(name, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("making the database file private: %w", err)
		}
	}
	file := "file:" + (&url.URL{Path: path}).EscapedPath()
	if err := prepareSQLite(file, info.Size() == 0); err != nil {
		return nil, fmt.Errorf("preparing the database: %w", err)
	}
	if err := registerGatherVFS(); err != nil {
		return nil, err
	}
	// Every connection's log writes are gathered (walvfs.go).
	base := file + "?vfs=" + walGatherVFS + "&" + sqlitePragmas
	// IMMEDIATE transactions take the write lock at BEGIN, so a transaction
	// never fails halfway on a lock upgrade.
	wp, err := cleanDB("sqlite", base+"&_txlock=immediate&_pragma=wal_autocheckpoint(0)"+
		fmt.Sprintf("&_pragma=journal_size_limit(%d)", walRestartAt))
	if err != nil {
		return nil, err
	}
	w := sqlx.NewDb(wp, "sqlite")
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	rp, err := cleanDB("sqlite", base+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, err
	}
	r := sqlx.NewDb(rp, "sqlite")
	n := opts.ReadConns
	if n <= 0 {
		n = 8
	}
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxLifetime(0)
	db := newDB(SQLite, w, r)
	if db.checkpoints, err = startCheckpoints(path, base, w, checkpointPolicy{every: checkpointEvery, restartAt: walRestartAt, restarted: opts.WALRestart}); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Dialect reports which database this is.
func (db *DB) Dialect() Dialect { return db.dialect }

// Close commits what is queued, then closes every connection.
func (db *DB) Close() error {
	db.mail.close()
	db.stopBackground()
	db.background.Wait()
	if db.stopListening != nil {
		db.stopListening()
		db.listening.Wait()
	}
	if db.checkpoints != nil {
		db.checkpoints.close()
	}
	if db.dialect == SQLite {
		db.reads.close()
		db.writes.close()
	}
	err := db.w.Close()
	if db.r != db.w {
		err = errors.Join(err, db.r.Close())
	}
	return err
}

// Ping checks that the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	return db.r.QueryRowxContext(ctx, "SELECT 1").Scan(&one)
}

// Migrate applies every embedded migration not yet applied. On PostgreSQL a
// session lock keeps two instances starting together from racing.
func (db *DB) Migrate(ctx context.Context) error {
	p, err := db.migrator(ctx)
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrating the %s database: %w", db.dialect, err)
	}
	return nil
}

// SchemaVersion is the newest applied migration.
func (db *DB) SchemaVersion(ctx context.Context) (int64, error) {
	p, err := db.migrator(ctx)
	if err != nil {
		return 0, err
	}
	return p.GetDBVersion(ctx)
}

// PendingMigrations counts the embedded migrations newer than the newest
// one the database has applied. It reads through the reading pool and takes
// no lock, so a readiness probe never waits on a writer or a migration.
func (db *DB) PendingMigrations(ctx context.Context) (int, error) {
	var applied int64
	if err := db.r.GetContext(ctx, &applied, "SELECT COALESCE(MAX(version_id), 0) FROM goose_db_version WHERE is_applied"); err != nil {
		return 0, err
	}
	versions, err := embeddedVersions(db.dialect)
	if err != nil {
		return 0, err
	}
	pending := 0
	for _, v := range versions {
		if v > applied {
			pending++
		}
	}
	return pending, nil
}

// embeddedVersions lists the versions of the migrations built in for d.
func embeddedVersions(d Dialect) ([]int64, error) {
	entries, err := fs.ReadDir(migrations, "migrations/"+string(d))
	if err != nil {
		return nil, err
	}
	versions := make([]int64, 0, len(entries))
	for _, e := range entries {
		v, err := goose.NumericComponent(e.Name())
		if err != nil {
			return nil, err
		}
		versions = append(versions, v)
	}
	return versions, nil
}

// LatestSchemaVersion is the newest migration this build knows.
func LatestSchemaVersion(d Dialect) (int64, error) {
	versions, err := embeddedVersions(d)
	if err != nil || len(versions) == 0 {
		return 0, err
	}
	return slices.Max(versions), nil
}

func (db *DB) migrator(ctx context.Context) (*goose.Provider, error) {
	dir, err := fs.Sub(migrations, "migrations/"+string(db.dialect))
	if err != nil {
		return nil, err
	}
	dialect := goose.DialectSQLite3
	var opts []goose.ProviderOption
	if db.dialect == Postgres {
		dialect = goose.DialectPostgres
		// The lock is per schema, so instances sharing a schema take turns
		// while unrelated schemas of one server do not wait on each other.
		var schema string
		if err := db.w.GetContext(ctx, &schema, "SELECT current_schema()"); err != nil {
			return nil, err
		}
		h := fnv.New64a()
		h.Write([]byte("callsign-migrations:" + schema))
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(h.Sum64()>>1)), lock.WithLockTimeout(1, 300))
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	return goose.NewProvider(dialect, db.w.DB, dir, opts...)
}

// tx runs f in a transaction on the writing connection, committing when f
// returns nil.
func (db *DB) tx(ctx context.Context, f func(tx *sqlx.Tx) error) error {
	tx, err := db.w.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// insertReturningID runs insert (an INSERT without RETURNING) in w and
// answers the new row's id. SQLite gives it with the result: an Exec, not
// a query, spares database/sql's rows (and the goroutine each query with a
// cancellable context starts); PostgreSQL's driver has no last insert id,
// so there the insert returns it.
func (db *DB) insertReturningID(ctx context.Context, w txer, insert string, args ...any) (int64, error) {
	var id int64
	if db.dialect == Postgres {
		err := w.GetContext(ctx, &id, db.q(insert+` RETURNING id`), args...)
		return id, err
	}
	res, err := w.ExecContext(ctx, db.q(insert), args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// q rebinds a query written with '?' placeholders for this dialect.
func (db *DB) q(query string) string {
	if db.dialect == Postgres {
		return sqlx.Rebind(sqlx.DOLLAR, query)
	}
	return query
}

// get reads one row of a rebound query.
func (db *DB) get(ctx context.Context, dest any, query string, args ...any) error {
	if s := db.readStmt(ctx, query); s != nil {
		return s.GetContext(ctx, dest, args...)
	}
	return db.r.GetContext(ctx, dest, query, db.planned(query, args)...)
}

// sel reads every row of a rebound query.
func (db *DB) sel(ctx context.Context, dest any, query string, args ...any) error {
	if s := db.readStmt(ctx, query); s != nil {
		return s.SelectContext(ctx, dest, args...)
	}
	return db.r.SelectContext(ctx, dest, query, db.planned(query, args)...)
}

// readStmt is query's cached statement on the read pool, or nil.
func (db *DB) readStmt(ctx context.Context, query string) *sqlx.Stmt {
	if db.reads == nil {
		return nil
	}
	return db.reads.get(ctx, query)
}

// notFound turns sql.ErrNoRows into a core NotFound error.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return core.NotFound("%s not found.", what)
	}
	return err
}

// uniqueField reports the field behind a uniqueness violation, or "" when
// err is none. Unique indexes are named "<table>__<field>"; SQLite names
// the columns of a plain unique index instead, and then the last column is
// the field.
func uniqueField(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		if _, field, ok := strings.Cut(pe.ConstraintName, "__"); ok {
			return field
		}
		return pe.ConstraintName
	}
	var se *sqlite.Error
	if errors.As(err, &se) && (se.Code() == 2067 || se.Code() == 1555) {
		msg := se.Error()
		if _, idx, ok := strings.Cut(msg, "index '"); ok {
			idx, _, _ = strings.Cut(idx, "'")
			_, field, _ := strings.Cut(idx, "__")
			return field
		}
		if _, cols, ok := strings.Cut(msg, "failed: "); ok {
			cols, _, _ = strings.Cut(cols, " (")
			last := cols[strings.LastIndexByte(cols, ',')+1:]
			return strings.TrimSpace(last[strings.LastIndexByte(last, '.')+1:])
		}
		return "unknown"
	}
	return ""
}

// conflictOr turns a uniqueness violation into a core Conflict naming its
// field, and passes every other error through.
func conflictOr(err error, messages map[string]string) error {
	field := uniqueField(err)
	if field == "" {
		return err
	}
	msg, ok := messages[field]
	if !ok {
		msg = "This value is already taken."
	}
	return &core.Error{Kind: core.KindConflict, Message: msg, Fields: map[string][]string{field: {msg}}}
}

// Microsecond timestamps: the one time format of both dialects.
func us(t time.Time) int64 { return t.UnixMicro() }

func fromUS(v int64) time.Time { return time.UnixMicro(v).UTC() }

func nullUS(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

func fromNullUS(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromUS(v.Int64)
	return &t
}

// nullString stores "" as NULL, for optional references.
func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// toCore converts scanned rows into domain values.
func toCore[R interface{ core() T }, T any](rows []R) []T {
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = r.core()
	}
	return out
}
