package smtpin

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Default session limits (CALLSIGN_SMTP_MAX_SESSIONS,
// CALLSIGN_SMTP_MAX_SESSIONS_PER_IP, CALLSIGN_SMTP_DATA_TIMEOUT).
const (
	DefaultMaxSessions      = 1000
	DefaultMaxSessionsPerIP = 50
	// DefaultDataTimeout is RFC 5321's 10 minutes for the DATA transfer
	// (section 4.5.3.2.6).
	DefaultDataTimeout = 10 * time.Minute
	// SessionTimeoutFactor: a whole session lasts at most this many DATA
	// timeouts, so a client that sends a command now and then cannot hold
	// a connection for ever.
	SessionTimeoutFactor = 3
)

// replyBusy is what a connection over a cap hears before it is closed.
const replyBusy = "421 4.7.0 Too many connections, try again later\r\n"

// replyShuttingDown is what a session between messages hears when the
// listener drains (RFC 5321 section 3.8; RFC 3463: 4.3.2, system not
// accepting network messages).
const replyShuttingDown = "421 4.3.2 Service shutting down, try again later\r\n"

// sessions caps the connections a listener hands to go-smtp, overall and
// per client address, and gives each a deadline for the whole session.
type sessions struct {
	net.Listener
	max, perIP int
	lifetime   time.Duration

	mu       sync.Mutex
	open     int
	byIP     map[string]int
	conns    map[*sessionConn]struct{}
	draining bool
}

func limitSessions(ln net.Listener, max, perIP int, lifetime time.Duration) *sessions {
	return &sessions{Listener: ln, max: max, perIP: perIP, lifetime: lifetime, byIP: map[string]int{}, conns: map[*sessionConn]struct{}{}}
}

// Accept returns the next connection within the caps; one over them is
// answered 421 and closed here, without ever reaching go-smtp.
func (s *sessions) Accept() (net.Conn, error) {
	for {
		c, err := s.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := clientIP(c)
		lc := &sessionConn{Conn: c, end: time.Now().Add(s.lifetime)}
		lc.release = func() { s.release(lc, ip) }
		s.mu.Lock()
		busy := s.open >= s.max || s.byIP[ip] >= s.perIP
		if !busy {
			s.open++
			s.byIP[ip]++
			s.conns[lc] = struct{}{}
			// Accepted as the listener closed: it drains like the others.
			lc.draining = s.draining
		}
		s.mu.Unlock()
		if busy {
			go refuse(c)
			continue
		}
		_ = lc.SetDeadline(time.Time{}) // the session's end holds from the start
		return lc, nil
	}
}

func (s *sessions) release(c *sessionConn, ip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if s.byIP[ip]--; s.byIP[ip] <= 0 {
		delete(s.byIP, ip)
	}
	delete(s.conns, c)
}

// drain ends every session once it is between messages: one waiting for
// its next command is answered 421 now, one in a transaction after it.
func (s *sessions) drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draining = true
	for c := range s.conns {
		c.drain()
	}
}

// refuse answers a connection over a cap and closes it; a client that does
// not read gets a second to take the line.
func refuse(c net.Conn) {
	defer c.Close()
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write([]byte(replyBusy))
}

func clientIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// sessionConn is one session's connection: every deadline go-smtp sets is
// held to the session's end, and closing it frees its place under the caps.
//
// It also lets a draining listener end the session between messages,
// which go-smtp's Shutdown does not do (it waits for clients to leave): a
// read for the next command gets a deadline already past, and its timeout
// becomes the 421 of a service shutting down. A transaction under way (from
// MAIL to the end of DATA) keeps its deadlines, so its message is finished.
type sessionConn struct {
	net.Conn
	end     time.Time
	once    sync.Once
	release func()

	mu            sync.Mutex
	draining      bool
	inTransaction bool
	// underTLS is set when a TLS handshake starts over the connection
	// (STARTTLS), after which a 421 in clear would corrupt the stream.
	underTLS atomic.Bool
}

// past is a deadline that has passed: a read waiting under it returns.
var past = time.Unix(1, 0)

func (c *sessionConn) clamp(t time.Time) time.Time {
	if t.IsZero() || t.After(c.end) {
		return c.end
	}
	return t
}

func (c *sessionConn) SetDeadline(t time.Time) error {
	if err := c.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

func (c *sessionConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ending() {
		t = past
	}
	return c.Conn.SetReadDeadline(c.clamp(t))
}

func (c *sessionConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.clamp(t))
}

// ending reports whether the session is to end at its next read; c.mu is held.
func (c *sessionConn) ending() bool { return c.draining && !c.inTransaction }

func (c *sessionConn) drain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining = true
	if c.ending() {
		_ = c.Conn.SetReadDeadline(past) // wakes a read waiting for a command
	}
}

// beginTransaction and endTransaction bracket a message: MAIL, then RSET,
// a new EHLO or the end of DATA.
func (c *sessionConn) beginTransaction() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inTransaction = true
}

func (c *sessionConn) endTransaction() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inTransaction = false
	if c.ending() {
		_ = c.Conn.SetReadDeadline(past)
	}
}

// Read turns the timeout of a read the drain cut short into the end of the
// session: the client hears 421 4.3.2 and go-smtp sees the connection close.
// Under TLS the timeout goes up as it is, and go-smtp answers 421 itself.
func (c *sessionConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		return n, err
	}
	c.mu.Lock()
	ending := c.ending()
	c.mu.Unlock()
	if !ending || c.underTLS.Load() {
		return n, err
	}
	_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = io.WriteString(c.Conn, replyShuttingDown)
	return n, io.EOF
}

func (c *sessionConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// sessionConnOf is the connection under a session's: go-smtp starts a
// session at EHLO, which may come after STARTTLS.
func sessionConnOf(c net.Conn) *sessionConn {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	return c.(*sessionConn)
}

// noticeTLS returns cfg with a hook that marks each session connection a
// handshake starts on; nil stays nil (no STARTTLS).
func noticeTLS(cfg *tls.Config) *tls.Config {
	if cfg == nil {
		return nil
	}
	cfg = cfg.Clone()
	next := cfg.GetConfigForClient
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if c, ok := hello.Conn.(*sessionConn); ok {
			c.underTLS.Store(true)
		}
		if next != nil {
			return next(hello)
		}
		return nil, nil
	}
	return cfg
}
