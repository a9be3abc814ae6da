package sqlstore

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
)

// gatherPools are two pools on one fresh database: through the gathering
// VFS (one connection, as the store's writer) and through SQLite's own
// unix VFS, which reads the file as another process would.
func gatherPools(t *testing.T, pragmas string) (gathered, plain *sqlx.DB) {
	return gatherPoolsIn(t, t.TempDir(), pragmas)
}

func gatherPoolsIn(t *testing.T, dir, pragmas string) (gathered, plain *sqlx.DB) {
	t.Helper()
	if err := registerGatherVFS(); err != nil {
		t.Fatal(err)
	}
	file := "file:" + (&url.URL{Path: filepath.Join(dir, "gather.db")}).EscapedPath() + "?" + pragmas
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

// intact fails unless db's integrity check passes and t holds rows rows.
func intact(t *testing.T, db *sqlx.DB, rows int) {
	t.Helper()
	var check string
	var n int
	if err := db.Get(&check, `PRAGMA integrity_check`); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q, %v", check, err)
	}
	if err := db.Get(&n, `SELECT count(*) FROM t`); err != nil || n != rows {
		t.Fatalf("%d rows, want %d, %v", n, rows, err)
	}
}

// TestWALGatheredCommitsOfEverySize: commits of 1 to 40 rows of 3 KB, so
// that a commit frame lands at every place in the 128 KiB held (its header
// the last bytes that fit, its page the first of the next write), are each
// whole in the file as they return: with synchronous NORMAL, which syncs
// nothing at a commit, and with the padding SQLite writes (syncing in the
// middle of a frame) where the disk does not promise powersafe overwrites.
func TestWALGatheredCommitsOfEverySize(t *testing.T) {
	for _, mode := range []string{"synchronous(NORMAL)", "synchronous(FULL)", "synchronous(FULL)&psow=0"} {
		t.Run(mode, func(t *testing.T) {
			gathered, plain := gatherPools(t, "_pragma=journal_mode(WAL)&_pragma="+mode+"&_pragma=wal_autocheckpoint(0)")
			rows := 0
			for size := 1; size <= 40; size++ {
				tx := gathered.MustBegin()
				for range size {
					tx.MustExec(`INSERT INTO t (n, v) VALUES (?, ?)`, rows, bytes.Repeat([]byte{byte(size)}, 3000))
					rows++
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				intact(t, plain, rows)
			}
		})
	}
}

// TestWALGatheredRewrittenChecksumsSurviveACrash: a transaction that writes
// a page again after it spilled to the log has SQLite rewrite the headers
// of its frames, the commit frame's last, at commit. With synchronous
// NORMAL nothing syncs after that rewrite; the log as a crash would leave
// it (copied as the commit returns) must still recover the whole
// transaction.
func TestWALGatheredRewrittenChecksumsSurviveACrash(t *testing.T) {
	for _, sync := range []string{"NORMAL", "FULL"} {
		t.Run(sync, func(t *testing.T) {
			dir := t.TempDir()
			gathered, _ := gatherPoolsIn(t, dir, "_pragma=journal_mode(WAL)&_pragma=synchronous("+sync+")&_pragma=wal_autocheckpoint(0)")
			gathered.MustExec(`PRAGMA cache_size = 4`)
			gathered.MustExec(`INSERT INTO t (n, v) VALUES (1, x'00')`)
			tx := gathered.MustBegin()
			for i := range 40 {
				tx.MustExec(`INSERT INTO t (n, v) VALUES (?, ?)`, 100+i, bytes.Repeat([]byte{0xAA}, 3000))
			}
			tx.MustExec(`UPDATE t SET v = x'0102' WHERE n < 110`) // pages that spilled, written again
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			crashed := t.TempDir()
			for _, name := range []string{"gather.db", "gather.db-wal"} {
				copyFile(t, filepath.Join(dir, name), filepath.Join(crashed, name))
			}
			recovered, err := sqlx.Open("sqlite", "file:"+filepath.Join(crashed, "gather.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer recovered.Close()
			intact(t, recovered, 41)
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}
