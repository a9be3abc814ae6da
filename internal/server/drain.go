package server

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// drain tracks what shutdown waits for: named parts, each done when its
// goroutine returns, some counting their open connections.
type drain struct {
	mu    sync.Mutex
	parts []*drainPart
	// started is set once every part runs; stopping once shutdown began.
	started, stopping atomic.Bool
}

type drainPart struct {
	name string
	noun string        // what open counts: "connection", "session"
	open *atomic.Int64 // nil when not counted
	done atomic.Bool
}

func (p *drainPart) openCount() int64 {
	if p.open == nil {
		return 0
	}
	return p.open.Load()
}

func (d *drain) part(name string) *drainPart {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.parts {
		if p.name == name {
			return p
		}
	}
	p := &drainPart{name: name}
	d.parts = append(d.parts, p)
	return p
}

// task runs f in g as the part called name.
func (d *drain) task(name string, g *errgroup.Group, f func() error) {
	p := d.part(name)
	g.Go(func() error {
		defer p.done.Store(true)
		return f()
	})
}

// count wraps ln so that the part called name knows its open connections;
// accepted, when set, hears each new one.
func (d *drain) count(name, noun string, ln net.Listener, accepted func()) net.Listener {
	p := d.part(name)
	p.noun, p.open = noun, &atomic.Int64{}
	return &countingListener{Listener: ln, open: p.open, accepted: accepted}
}

// describe lists the parts still running, such as
// "SMTP (1 open session), outbox"; "nothing" when none is.
func (d *drain) describe() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var running []string
	for _, p := range d.parts {
		if p.done.Load() {
			continue
		}
		if n := p.openCount(); n > 0 {
			noun := p.noun
			if n > 1 {
				noun += "s"
			}
			running = append(running, fmt.Sprintf("%s (%d open %s)", p.name, n, noun))
			continue
		}
		running = append(running, p.name)
	}
	if len(running) == 0 {
		return "nothing"
	}
	return strings.Join(running, ", ")
}

// NotRunning names what keeps the service from being ready: "starting"
// until every part was started, "shutting down" once shutdown began, and
// otherwise each part that ended (it failed, and the service is going down).
func (d *drain) NotRunning() []string {
	switch {
	case d.stopping.Load():
		return []string{"shutting down"}
	case !d.started.Load():
		return []string{"starting"}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var ended []string
	for _, p := range d.parts {
		if p.done.Load() {
			ended = append(ended, p.name)
		}
	}
	return ended
}

// countingListener counts the connections it accepted that are still open.
type countingListener struct {
	net.Listener
	open     *atomic.Int64
	accepted func() // nil for none
}

func (l *countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if l.accepted != nil {
		l.accepted()
	}
	l.open.Add(1)
	return &countedConn{Conn: conn, open: l.open}, nil
}

type countedConn struct {
	net.Conn
	once sync.Once
	open *atomic.Int64
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}
