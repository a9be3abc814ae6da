package smtpin

import (
	"net"
	"sync"
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

// sessions caps the connections a listener hands to go-smtp, overall and
// per client address, and gives each a deadline for the whole session.
type sessions struct {
	net.Listener
	max, perIP int
	lifetime   time.Duration

	mu   sync.Mutex
	open int
	byIP map[string]int
}

func limitSessions(ln net.Listener, max, perIP int, lifetime time.Duration) *sessions {
	return &sessions{Listener: ln, max: max, perIP: perIP, lifetime: lifetime, byIP: map[string]int{}}
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
		s.mu.Lock()
		busy := s.open >= s.max || s.byIP[ip] >= s.perIP
		if !busy {
			s.open++
			s.byIP[ip]++
		}
		s.mu.Unlock()
		if busy {
			go refuse(c)
			continue
		}
		lc := &sessionConn{Conn: c, end: time.Now().Add(s.lifetime)}
		lc.release = func() { s.release(ip) }
		_ = lc.SetDeadline(time.Time{}) // the session's end holds from the start
		return lc, nil
	}
}

func (s *sessions) release(ip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if s.byIP[ip]--; s.byIP[ip] <= 0 {
		delete(s.byIP, ip)
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
type sessionConn struct {
	net.Conn
	end     time.Time
	once    sync.Once
	release func()
}

func (c *sessionConn) clamp(t time.Time) time.Time {
	if t.IsZero() || t.After(c.end) {
		return c.end
	}
	return t
}

func (c *sessionConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.clamp(t)) }
func (c *sessionConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.clamp(t))
}
func (c *sessionConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.clamp(t))
}

func (c *sessionConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
