package smtpin_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/smtpin"
)

// greeting connects and returns the server's first line.
func greeting(t *testing.T, addr string) (net.Conn, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the greeting: %v", err)
	}
	return c, line
}

func TestSessionCapsPerAddressAndOverall(t *testing.T) {
	t.Run("per address", func(t *testing.T) {
		w := newWorldWith(t, nil, 1<<20, func(o *smtpin.Options) { o.MaxSessions, o.MaxSessionsPerIP = 10, 2 })
		var held []net.Conn
		for range 2 {
			c, line := greeting(t, w.addr)
			if !strings.HasPrefix(line, "220 ") {
				t.Fatalf("greeting %q", line)
			}
			held = append(held, c)
		}
		if _, line := greeting(t, w.addr); !strings.HasPrefix(line, "421 4.7.0 ") {
			t.Fatalf("a third session from one address: %q; want 421 4.7.0", line)
		}
		// A session that ends frees its place.
		held[0].Close()
		eventuallyGreeted(t, w.addr)
	})
	t.Run("overall", func(t *testing.T) {
		w := newWorldWith(t, nil, 1<<20, func(o *smtpin.Options) { o.MaxSessions, o.MaxSessionsPerIP = 2, 50 })
		greeting(t, w.addr)
		greeting(t, w.addr)
		if _, line := greeting(t, w.addr); !strings.HasPrefix(line, "421 4.7.0 ") {
			t.Fatalf("a third session: %q; want 421 4.7.0", line)
		}
	})
}

func eventuallyGreeted(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, line := greeting(t, addr)
		c.Close()
		if strings.HasPrefix(line, "220 ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still refused: %q", line)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A DATA that trickles a byte at a time ends at the DATA timeout, and a
// session that sends a command now and then ends at the session's.
func TestSlowClientsCannotHoldAConnection(t *testing.T) {
	w := newWorldWith(t, nil, 1<<20, func(o *smtpin.Options) { o.DataTimeout = 600 * time.Millisecond })
	conn, _ := greeting(t, w.addr)
	r := bufio.NewReader(conn)
	for _, cmd := range []string{"EHLO client.example.org", "MAIL FROM:<a@example.org>", "RCPT TO:<alice@agents.test>", "DATA"} {
		conn.Write([]byte(cmd + "\r\n"))
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v", cmd, err)
			}
			if len(line) < 4 || line[3] != '-' {
				break
			}
		}
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	var err error
	for time.Since(start) < 5*time.Second {
		if _, err = conn.Write([]byte("x")); err != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err == nil {
		t.Fatalf("a trickling DATA held the connection for %v", time.Since(start))
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("DATA ended after %v; want about the 600 ms DATA timeout", took)
	}

	// Commands every 300 ms: each in time, but the session ends at 3 × 600 ms.
	c2 := w.dial()
	start = time.Now()
	for time.Since(start) < 6*time.Second {
		if err = c2.Noop(); err != nil {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err == nil {
		t.Fatal("a session of NOOPs lasted 6 s")
	}
	if took := time.Since(start); took < 1500*time.Millisecond || took > 4*time.Second {
		t.Fatalf("the session ended after %v; want about 1.8 s", took)
	}
}

// Each 550 for an unknown recipient after the first in a session waits
// longer, so addresses cannot be tried quickly.
func TestUnknownRecipientsAreSlowedDown(t *testing.T) {
	w := newWorldWith(t, nil, 1<<20, func(o *smtpin.Options) { o.UnknownRecipientDelay = 100 * time.Millisecond })
	c := w.dial()
	if err := c.Mail("a@example.org", nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 5 {
		err := c.Rcpt("nobody"+string(rune('a'+i))+"@agents.test", nil)
		wantCode(t, err, 550, smtp.EnhancedCode{5, 1, 1})
	}
	// 0 + 100 + 200 + 300 + 400 ms.
	if took := time.Since(start); took < time.Second {
		t.Fatalf("five unknown recipients took %v; want at least 1 s", took)
	}
	// A known recipient is not slowed.
	start = time.Now()
	if err := c.Rcpt("alice@agents.test", nil); err != nil || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("known recipient: %v after %v", err, time.Since(start))
	}
}
