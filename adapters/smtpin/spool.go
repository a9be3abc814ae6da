package smtpin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/emersion/go-smtp"
	"golang.org/x/sync/semaphore"
)

// DefaultMaxInflightBytes caps the bytes of DATA all sessions hold at once
// (CALLSIGN_SMTP_MAX_INFLIGHT_BYTES).
const DefaultMaxInflightBytes = 256 << 20

// SpoolThreshold is how much of a message is kept in memory while it is
// read; the rest goes to a temporary file, so a session that is slow to
// send costs a file rather than memory.
const SpoolThreshold = 1 << 20

// budgetChunk is the step in which a message's bytes are reserved: small
// enough that ordinary mail (tens of KB) reserves little, large enough that
// a 25 MiB message asks the semaphore a few hundred times, not per read.
const budgetChunk = 64 << 10

// replyBusyData is what a message hears when DATA in flight is at the cap:
// the sender keeps it and tries again (RFC 3463 4.3.1, system storage).
var replyBusyData = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 1},
	Message: "Too much mail in transit; try again later"}

var (
	errNoBudget = errors.New("inbound SMTP in-flight byte budget exhausted")
	// errSpool is a failure to keep what the client sent (a full disk).
	errSpool = errors.New("spooling the message")
)

// reservation is one message's share of the in-flight budget. The size of
// a message is unknown until its end, so small mail reserves its bytes as
// they arrive (in budgetChunk steps): reserving the size limit for every
// message would let the default budget admit ten at once however small
// they are. A message that grows past SpoolThreshold reserves the size
// limit there and then, and holds it until the message is stored: a
// large message that is admitted can finish, where large messages each
// holding part of what they need could all run out together (50 senders of
// 20 MB each stalled at 5 MB under the default budget, and only three got
// through). A message that cannot get its share is answered 451 at once,
// rather than made to wait on the others.
type reservation struct {
	budget *semaphore.Weighted
	limit  int64 // the most one message reserves: its size limit
	held   int64
}

// cover makes the reservation hold at least n bytes, the size limit once n
// is past SpoolThreshold.
func (r *reservation) cover(n int64) error {
	if n <= r.held {
		return nil
	}
	want := min((n+budgetChunk-1)/budgetChunk*budgetChunk, r.limit)
	if n > SpoolThreshold {
		want = r.limit
	}
	if want < n || !r.budget.TryAcquire(want-r.held) {
		return errNoBudget
	}
	r.held = want
	return nil
}

func (r *reservation) release() {
	r.budget.Release(r.held)
	r.held = 0
}

// spool is one message's DATA: in memory up to SpoolThreshold, then in a
// temporary file in dir, unlinked as soon as it is made so that nothing is
// left behind whatever happens to the process.
type spool struct {
	dir  string
	mem  *bytes.Buffer // from spoolBuffers, until the file or close
	file *os.File
	size int64
}

// spoolBuffers hold messages while they are read, until spool.bytes
// copies them out: one grown anew for every message was a sixteenth of
// what receiving it allocated. Those grown past maxPooledSpool are let go.
var spoolBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledSpool = 64 << 10

func (s *spool) Write(p []byte) (int, error) {
	if s.file == nil && s.mem == nil {
		s.mem = spoolBuffers.Get().(*bytes.Buffer)
	}
	if s.file == nil && s.mem.Len()+len(p) > SpoolThreshold {
		f, err := os.CreateTemp(s.dir, "smtp-data-*")
		if err != nil {
			return 0, err
		}
		_ = os.Remove(f.Name()) // the open file stays readable
		if _, err := f.Write(s.mem.Bytes()); err != nil {
			f.Close()
			return 0, err
		}
		s.file = f
		s.releaseMem()
	}
	var n int
	var err error
	if s.file != nil {
		n, err = s.file.Write(p)
	} else {
		n, err = s.mem.Write(p)
	}
	s.size += int64(n)
	return n, err
}

// bytes is the whole message after room free bytes, in one buffer of
// exactly that size: the one copy the parser and the store read, with room
// for what goes on top of the stored source (app.InboundMail.Headroom).
func (s *spool) bytes(room int) ([]byte, error) {
	buf := make([]byte, int64(room)+s.size)
	if s.file == nil {
		if s.mem != nil {
			copy(buf[room:], s.mem.Bytes())
		}
		return buf, nil
	}
	if _, err := s.file.ReadAt(buf[room:], 0); err != nil {
		return nil, fmt.Errorf("reading the spooled message: %w", err)
	}
	return buf, nil
}

func (s *spool) close() {
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
	s.releaseMem()
}

// releaseMem gives the memory buffer back; the spool holds no bytes after.
func (s *spool) releaseMem() {
	if s.mem == nil {
		return
	}
	if s.mem.Cap() <= maxPooledSpool {
		s.mem.Reset()
		spoolBuffers.Put(s.mem)
	}
	s.mem = nil
}

// readBuffers are readData's 32 KiB buffers: one made per message was a
// sixth of all the bytes ingest allocated (issue 32).
var readBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readData reads DATA from r into sp, reserving its bytes in res as they
// arrive; errNoBudget when the budget runs out first.
func readData(r io.Reader, sp *spool, res *reservation) error {
	bp := readBuffers.Get().(*[]byte)
	defer readBuffers.Put(bp)
	buf := *bp
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if berr := res.cover(sp.size + int64(n)); berr != nil {
				return berr
			}
			if _, werr := sp.Write(buf[:n]); werr != nil {
				return fmt.Errorf("%w: %v", errSpool, werr)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
