package sqlstore

import (
	"bytes"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
)

// gatherPools are two pools on one fresh database: through the gathering
// VFS (one connection, as the store's writer) and through SQLite's own
// unix VFS, which reads the file as another process would.
func gatherPools(t *testing.T, pragmas string) (gathered, plain *sqlx.DB) {
	t.Helper()
	if err := registerGatherVFS(); err != nil {
		t.Fatal(err)
	}
	file := "file:" + (&url.URL{Path: filepath.Join(t.TempDir(), "gather.db")}).EscapedPath() + "?" + pragmas
	open := func(dsn string) *sqlx.DB {
		db, err := sqlx.Open("sqlite", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		db.SetMaxOpenConns(1)
		return db
	}
	gathered, plain = open(file+"&vfs="+walGatherVFS), open(file)
	if _, err := gathered.Exec(`CREATE TABLE t (n INTEGER PRIMARY KEY, v BLOB)`); err != nil {
		t.Fatal(err)
	}
	return gathered, plain
}

// TestWALGatheredIntoFewWrites: a commit of many pages is one or two writes
// to the log, and another process reads it as soon as the commit returns,
// with or without a sync at commit (synchronous NORMAL does not sync, so
// there the commit frame is what makes the writes).
func TestWALGatheredIntoFewWrites(t *testing.T) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		t.Run(sync, func(t *testing.T) {
			gathered, plain := gatherPools(t, "_pragma=journal_mode(WAL)&_pragma=synchronous("+sync+")&_pragma=wal_autocheckpoint(0)")
			for round := range 3 {
				before := walWrites.Load()
				tx := gathered.MustBegin()
				for i := range 20 { // 20 rows of 2 KB: 10 or more 4 KiB pages
					tx.MustExec(`INSERT INTO t (n, v) VALUES (?, ?)`, round*100+i, bytes.Repeat([]byte{byte(i)}, 2000))
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				if writes := walWrites.Load() - before; writes > 2 {
					t.Errorf("round %d: the commit took %d writes to the log", round, writes)
				}
				var n int
				var v []byte
				if err := plain.QueryRow(`SELECT count(*), (SELECT v FROM t WHERE n = ?) FROM t`, round*100+19).Scan(&n, &v); err != nil {
					t.Fatal(err)
				}
				if n != 20*(round+1) || !bytes.Equal(v, bytes.Repeat([]byte{19}, 2000)) {
					t.Fatalf("round %d: another process reads %d rows and %d bytes", round, n, len(v))
				}
			}
		})
	}
}

// TestWALGatheredRollbackLeavesOthersAlone: frames a rolled-back transaction
// wrote (SQLite spills pages to the log when its cache is full) are made
// before the connection gives up the write lock, never later over frames
// another writer has committed at the same place since.
func TestWALGatheredRollbackLeavesOthersAlone(t *testing.T) {
	gathered, plain := gatherPools(t, "_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=wal_autocheckpoint(0)")
	// An empty log, so that undoing the transaction reads pages from the
	// database, not the log (a read of the log would make what is held).
	gathered.MustExec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	gathered.MustExec(`PRAGMA cache_size = 4`)
	tx := gathered.MustBegin()
	for i := range 60 { // more pages than the cache holds: they spill to the log
		tx.MustExec(`INSERT INTO t (n, v) VALUES (?, ?)`, i, bytes.Repeat([]byte{0xAA}, 3000))
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	// Another writer commits where the rolled-back frames were.
	ptx := plain.MustBegin()
	for i := range 60 {
		ptx.MustExec(`INSERT INTO t (n, v) VALUES (?, ?)`, 1000+i, bytes.Repeat([]byte{0x55}, 3000))
	}
	if err := ptx.Commit(); err != nil {
		t.Fatal(err)
	}
	// The gathering connection writes again, after them.
	gathered.MustExec(`INSERT INTO t (n, v) VALUES (2000, x'01')`)

	for _, db := range []*sqlx.DB{plain, gathered} {
		var check string
		if err := db.Get(&check, `PRAGMA integrity_check`); err != nil || check != "ok" {
			t.Fatalf("integrity_check: %q, %v", check, err)
		}
		var others int
		if err := db.Get(&others, `SELECT count(*) FROM t WHERE n >= 1000 AND n < 2000 AND v = ?`, bytes.Repeat([]byte{0x55}, 3000)); err != nil || others != 60 {
			t.Fatalf("the other writer's rows: %d intact, %v", others, err)
		}
	}
}
