package imap

import (
	"errors"
	"net"
	"sync/atomic"
)

// errOverBudget ends a source connection whose server sent more than the
// worker asked for.
var errOverBudget = errors.New("the server sent more than was asked for")

// meter is a source connection that reads only as many bytes as the worker
// has allowed for what it asked: the hard cap on what a server can make a
// worker read and hold. go-imap's client buffers a response's strings and
// non-body literals whole, so without it one endless line or literal would
// be held in memory; with it, a worker holds at most what it allowed. The
// worker credits each command with what its answer may take.
type meter struct {
	net.Conn
	left atomic.Int64
}

func newMeter(c net.Conn, initial int64) *meter {
	m := &meter{Conn: c}
	m.left.Store(initial)
	return m
}

// credit allows n more bytes.
func (m *meter) credit(n int64) { m.left.Add(n) }

// over reports whether the budget ran out.
func (m *meter) over() bool { return m.left.Load() <= 0 }

func (m *meter) Read(p []byte) (int, error) {
	left := m.left.Load()
	if left <= 0 {
		return 0, errOverBudget
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := m.Conn.Read(p)
	m.left.Add(-int64(n))
	return n, err
}
