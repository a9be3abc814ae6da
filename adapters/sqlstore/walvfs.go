package sqlstore

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// The VFS every SQLite connection here opens its files through: SQLite's
// own unix VFS, except that the writes a transaction makes to the WAL are
// gathered into one write. SQLite writes each frame of a commit with two
// pwrite calls (its 24-byte header, then its page), so a commit of 80
// frames made 160 system calls; on this project's bench machine those were
// 15% of the server's CPU, and one call for the same bytes costs a
// twentieth of them (docs/perf/2026-12-06-speed.md, session 8).
//
// What SQLite may rely on stays as it was. Gathered bytes are made, with
// one write, before anything else is done with the log file (a read, a
// sync, a size, a truncation, a file control, a close) and before a write
// that does not follow them. A commit frame's header (the only frame
// header that carries the database's size: the commit frame, the copies
// SQLite pads it with, its header rewritten with new checksums) is made at
// once with what is held before it, and so is every write after it until
// the connection's next transaction. So a committed transaction is in the
// file before any reader can see it and before its commit returns,
// whatever PRAGMA synchronous says, and a failed write fails the
// transaction as SQLite's own would. What is still held when the
// connection gives up the log's write lock is what a rolled-back
// transaction spilled, which no one reads: it is dropped, never made later
// over frames another writer has committed there since.
const (
	walGatherVFS = "callsign-unix"
	// walGatherLimit is how many bytes are held at most: the unix VFS
	// writes at most 128 KiB less a byte in one call (and fails a write
	// whose rest is a multiple of 128 KiB). A commit of a few 5 KB
	// messages, 170 KB or so, takes three writes instead of 160.
	walGatherLimit = 1<<17 - 1
	walFrameHeader = 24
)

// shimFile is the head of each file this VFS opens, in SQLite's memory;
// the unix VFS's own file follows it.
type shimFile struct {
	methods     uintptr // sqlite3_file.pMethods: &walIO or &passIO
	real        uintptr // the unix VFS's file, right after this head
	realMethods uintptr
	name        uintptr // a main database: the name it was opened by
	peer        uintptr // a main database: its WAL's shimFile; a WAL: its database's
	buf         uintptr // a WAL: bytes written but not yet made (walGatherLimit)
	bufOff      int64   // their offset in the file
	bufLen      int64
	// committing: since a commit frame's header every write is made at once.
	committing bool
}

const shimHead = unsafe.Sizeof(shimFile{})

var (
	walIO, passIO sqlite3.Tsqlite3_io_methods
	gatherVFS     sqlite3.Tsqlite3_vfs
	unixVFS       uintptr // the unix VFS, which does the work

	// databasesByName finds a connection's main database file from its
	// WAL's name (sqlite3_filename_database returns the very pointer the
	// database was opened by, so connections on one file stay apart).
	databasesByName   = map[uintptr]uintptr{}
	databasesByNameMu sync.Mutex

	// walWrites counts the writes made to WAL files (for the tests).
	walWrites atomic.Int64
)

// registerGatherVFS registers the VFS once; the connections name it.
var registerGatherVFS = sync.OnceValue(func() error {
	tls := libc.NewTLS()
	defer tls.Close()
	unix, err := libc.CString("unix")
	if err != nil {
		return err
	}
	defer libc.Xfree(tls, unix)
	if unixVFS = sqlite3.Xsqlite3_vfs_find(tls, unix); unixVFS == 0 {
		return errors.New("SQLite has no unix VFS")
	}
	name, err := libc.CString(walGatherVFS) // kept for the life of the process
	if err != nil {
		return err
	}
	// The unix VFS's other methods ignore the VFS they are given.
	gatherVFS = *(*sqlite3.Tsqlite3_vfs)(cptr(unixVFS))
	gatherVFS.FszOsFile += int32(shimHead)
	gatherVFS.FzName, gatherVFS.FpNext = name, 0
	setFn(&gatherVFS.FxOpen, shimOpen)

	for _, io := range []*sqlite3.Tsqlite3_io_methods{&walIO, &passIO} {
		io.FiVersion = 3
		setFn(&io.FxClose, shimClose)
		setFn(&io.FxRead, shimRead)
		setFn(&io.FxWrite, shimWrite)
		setFn(&io.FxTruncate, shimTruncate)
		setFn(&io.FxSync, shimSync)
		setFn(&io.FxFileSize, shimFileSize)
		setFn(&io.FxLock, shimLock)
		setFn(&io.FxUnlock, shimUnlock)
		setFn(&io.FxCheckReservedLock, shimCheckReservedLock)
		setFn(&io.FxFileControl, shimFileControl)
		setFn(&io.FxSectorSize, shimSectorSize)
		setFn(&io.FxDeviceCharacteristics, shimDeviceCharacteristics)
		setFn(&io.FxShmMap, shimShmMap)
		setFn(&io.FxShmLock, shimShmLock)
		setFn(&io.FxShmBarrier, shimShmBarrier)
		setFn(&io.FxShmUnmap, shimShmUnmap)
		setFn(&io.FxFetch, shimFetch)
		setFn(&io.FxUnfetch, shimUnfetch)
	}
	setFn(&walIO.FxWrite, walWrite)
	if rc := sqlite3.Xsqlite3_vfs_register(tls, uintptr(unsafe.Pointer(&gatherVFS)), 0); rc != sqlite3.SQLITE_OK {
		return errors.New("registering the WAL-gathering VFS: " + libc.GoString(sqlite3.Xsqlite3_errstr(tls, rc)))
	}
	return nil
})

// setFn stores a Go function where SQLite keeps a C function pointer, as
// the transpiled SQLite itself does; f must be a top-level function.
func setFn[F any](slot *uintptr, f F) { *(*F)(unsafe.Pointer(slot)) = f }

// fn is the Go function behind a C function pointer.
func fn[F any](p uintptr) F { return *(*F)(unsafe.Pointer(&p)) }

// cptr is the address p, which SQLite's memory or the Go program's static
// data holds, as a pointer (never one into Go's heap).
func cptr(p uintptr) unsafe.Pointer { return unsafe.Add(nil, p) }

// cbytes is the n bytes at p in SQLite's memory.
func cbytes(p uintptr, n int64) []byte { return unsafe.Slice((*byte)(cptr(p)), n) }

func shim(p uintptr) *shimFile { return (*shimFile)(cptr(p)) }

func (f *shimFile) io() *sqlite3.Tsqlite3_io_methods {
	return (*sqlite3.Tsqlite3_io_methods)(cptr(f.realMethods))
}

func shimOpen(tls *libc.TLS, _ uintptr, zName, p uintptr, flags int32, pOutFlags uintptr) int32 {
	f := shim(p)
	*f = shimFile{real: p + shimHead}
	unixOpen := fn[func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32]((*sqlite3.Tsqlite3_vfs)(cptr(unixVFS)).FxOpen)
	rc := unixOpen(tls, unixVFS, zName, f.real, flags, pOutFlags)
	f.realMethods = (*sqlite3.Tsqlite3_file)(cptr(f.real)).FpMethods
	if f.realMethods == 0 { // not opened: SQLite will not close it
		return rc
	}
	f.methods = uintptr(unsafe.Pointer(&passIO))
	switch {
	case flags&sqlite3.SQLITE_OPEN_WAL != 0 && zName != 0:
		f.methods = uintptr(unsafe.Pointer(&walIO))
		databasesByNameMu.Lock()
		if db := databasesByName[sqlite3.Xsqlite3_filename_database(tls, zName)]; db != 0 {
			f.peer, shim(db).peer = db, p
		}
		databasesByNameMu.Unlock()
	case flags&sqlite3.SQLITE_OPEN_MAIN_DB != 0 && zName != 0:
		f.name = zName
		databasesByNameMu.Lock()
		databasesByName[zName] = p
		databasesByNameMu.Unlock()
	}
	return rc
}

// walWrite holds a write to the WAL, or makes it.
func walWrite(tls *libc.TLS, p, zBuf uintptr, iAmt int32, iOfst int64) int32 {
	f := shim(p)
	n := int64(iAmt)
	if n == walFrameHeader {
		f.committing = binary.BigEndian.Uint32(cbytes(zBuf, walFrameHeader)[4:8]) != 0
	}
	if f.bufLen > 0 && (iOfst != f.bufOff+f.bufLen || f.bufLen+n > walGatherLimit) {
		if rc := f.flush(tls); rc != sqlite3.SQLITE_OK {
			return rc
		}
	}
	if f.peer == 0 { // no lock to drop what a rollback left at: write through
		return f.write(tls, zBuf, iAmt, iOfst)
	}
	if f.buf == 0 && n <= walGatherLimit {
		f.buf = sqlite3.Xsqlite3_malloc64(tls, walGatherLimit)
	}
	if f.buf == 0 || n > walGatherLimit {
		return f.write(tls, zBuf, iAmt, iOfst)
	}
	if f.bufLen == 0 {
		f.bufOff = iOfst
	}
	copy(cbytes(f.buf+uintptr(f.bufLen), n), cbytes(zBuf, n))
	f.bufLen += n
	if f.committing {
		return f.flush(tls)
	}
	return sqlite3.SQLITE_OK
}

// flush makes the gathered writes. What fails to be written stays held,
// so that the next use of the file tries again and fails too: the commit
// they belong to can never succeed without them (and what a rolled-back
// transaction held is dropped at its unlock).
func (f *shimFile) flush(tls *libc.TLS) int32 {
	if f.bufLen == 0 {
		return sqlite3.SQLITE_OK
	}
	rc := f.write(tls, f.buf, int32(f.bufLen), f.bufOff)
	if rc == sqlite3.SQLITE_OK {
		f.bufLen = 0
	}
	return rc
}

func (f *shimFile) write(tls *libc.TLS, zBuf uintptr, iAmt int32, iOfst int64) int32 {
	if f.methods == uintptr(unsafe.Pointer(&walIO)) {
		walWrites.Add(1)
	}
	return fn[func(*libc.TLS, uintptr, uintptr, int32, int64) int32](f.io().FxWrite)(tls, f.real, zBuf, iAmt, iOfst)
}

// flushed makes a WAL's gathered writes before another use of the file.
func flushed(tls *libc.TLS, p uintptr) (*shimFile, int32) {
	f := shim(p)
	return f, f.flush(tls)
}

func shimClose(tls *libc.TLS, p uintptr) int32 {
	f, rc := flushed(tls, p)
	if f.buf != 0 {
		sqlite3.Xsqlite3_free(tls, f.buf)
		f.buf = 0
	}
	if f.peer != 0 {
		shim(f.peer).peer = 0
	}
	if f.name != 0 {
		databasesByNameMu.Lock()
		delete(databasesByName, f.name)
		databasesByNameMu.Unlock()
	}
	if closeRC := fn[func(*libc.TLS, uintptr) int32](f.io().FxClose)(tls, f.real); rc == sqlite3.SQLITE_OK {
		rc = closeRC
	}
	return rc
}

func shimWrite(tls *libc.TLS, p, zBuf uintptr, iAmt int32, iOfst int64) int32 {
	return shim(p).write(tls, zBuf, iAmt, iOfst)
}

func shimRead(tls *libc.TLS, p, zBuf uintptr, iAmt int32, iOfst int64) int32 {
	f, rc := flushed(tls, p)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return fn[func(*libc.TLS, uintptr, uintptr, int32, int64) int32](f.io().FxRead)(tls, f.real, zBuf, iAmt, iOfst)
}

func shimTruncate(tls *libc.TLS, p uintptr, size int64) int32 {
	f, rc := flushed(tls, p)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return fn[func(*libc.TLS, uintptr, int64) int32](f.io().FxTruncate)(tls, f.real, size)
}

func shimSync(tls *libc.TLS, p uintptr, flags int32) int32 {
	f, rc := flushed(tls, p)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return fn[func(*libc.TLS, uintptr, int32) int32](f.io().FxSync)(tls, f.real, flags)
}

func shimFileSize(tls *libc.TLS, p, pSize uintptr) int32 {
	f, rc := flushed(tls, p)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return fn[func(*libc.TLS, uintptr, uintptr) int32](f.io().FxFileSize)(tls, f.real, pSize)
}

func shimFileControl(tls *libc.TLS, p uintptr, op int32, pArg uintptr) int32 {
	f, rc := flushed(tls, p)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return fn[func(*libc.TLS, uintptr, int32, uintptr) int32](f.io().FxFileControl)(tls, f.real, op, pArg)
}

func shimLock(tls *libc.TLS, p uintptr, lock int32) int32 {
	f := shim(p)
	return fn[func(*libc.TLS, uintptr, int32) int32](f.io().FxLock)(tls, f.real, lock)
}

func shimUnlock(tls *libc.TLS, p uintptr, lock int32) int32 {
	f := shim(p)
	return fn[func(*libc.TLS, uintptr, int32) int32](f.io().FxUnlock)(tls, f.real, lock)
}

func shimCheckReservedLock(tls *libc.TLS, p, pResOut uintptr) int32 {
	f := shim(p)
	return fn[func(*libc.TLS, uintptr, uintptr) int32](f.io().FxCheckReservedLock)(tls, f.real, pResOut)
}

func shimSectorSize(tls *libc.TLS, p uintptr) int32 {
	f := shim(p)
	return fn[func(*libc.TLS, uintptr) int32](f.io().FxSectorSize)(tls, f.real)
}

func shimDeviceCharacteristics(tls *libc.TLS, p uintptr) int32 {
	f := shim(p)
	return fn[func(*libc.TLS, uintptr) int32](f.io().FxDeviceCharacteristics)(tls, f.real)
}

// The shared-memory methods exist only on a main database's file.

func shimShmMap(tls *libc.TLS, p uintptr, iPg, pgsz, bExtend int32, pp uintptr) int32 {
	f := shim(p)
	if f.io().FxShmMap == 0 {
		return sqlite3.SQLITE_IOERR
	}
	return fn[func(*libc.TLS, uintptr, int32, int32, int32, uintptr) int32](f.io().FxShmMap)(tls, f.real, iPg, pgsz, bExtend, pp)
}

// shimShmLock makes what the connection's WAL holds before it gives up the
// log's write lock.
func shimShmLock(tls *libc.TLS, p uintptr, offset, n, flags int32) int32 {
	f := shim(p)
	if f.io().FxShmLock == 0 {
		return sqlite3.SQLITE_IOERR
	}
	if flags&sqlite3.SQLITE_SHM_UNLOCK != 0 && offset <= sqlite3.WAL_WRITE_LOCK && offset+n > sqlite3.WAL_WRITE_LOCK && f.peer != 0 {
		// A commit's frames were made at its commit frame; what is left is
		// a rolled-back transaction's, which no one will read.
		shim(f.peer).bufLen, shim(f.peer).committing = 0, false
	}
	return fn[func(*libc.TLS, uintptr, int32, int32, int32) int32](f.io().FxShmLock)(tls, f.real, offset, n, flags)
}

func shimShmBarrier(tls *libc.TLS, p uintptr) {
	f := shim(p)
	if f.peer != 0 {
		// SQLite publishes a commit to readers across this barrier. By the
		// rules above nothing of it is held by then; this is a net under
		// them, which cannot report a failure.
		shim(f.peer).flush(tls)
	}
	if f.io().FxShmBarrier != 0 {
		fn[func(*libc.TLS, uintptr)](f.io().FxShmBarrier)(tls, f.real)
	}
}

func shimShmUnmap(tls *libc.TLS, p uintptr, deleteFlag int32) int32 {
	f := shim(p)
	if f.io().FxShmUnmap == 0 {
		return sqlite3.SQLITE_OK
	}
	return fn[func(*libc.TLS, uintptr, int32) int32](f.io().FxShmUnmap)(tls, f.real, deleteFlag)
}

func shimFetch(tls *libc.TLS, p uintptr, iOfst int64, iAmt int32, pp uintptr) int32 {
	f := shim(p)
	if f.io().FiVersion < 3 || f.io().FxFetch == 0 {
		*(*uintptr)(cptr(pp)) = 0
		return sqlite3.SQLITE_OK
	}
	return fn[func(*libc.TLS, uintptr, int64, int32, uintptr) int32](f.io().FxFetch)(tls, f.real, iOfst, iAmt, pp)
}

func shimUnfetch(tls *libc.TLS, p uintptr, iOfst int64, pPage uintptr) int32 {
	f := shim(p)
	if f.io().FiVersion < 3 || f.io().FxUnfetch == 0 {
		return sqlite3.SQLITE_OK
	}
	return fn[func(*libc.TLS, uintptr, int64, uintptr) int32](f.io().FxUnfetch)(tls, f.real, iOfst, pPage)
}
