package imap_test

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/egress"
	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// hostile listens on loopback and hands every connection to serve.
func hostile(t *testing.T, serve func(net.Conn)) (host string, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	a := ln.Addr().(*net.TCPAddr)
	return "127.0.0.1", a.Port
}

func (w *world) putSourceAt(a agent, host string, port int, tlsMode core.SourceTLS) {
	w.t.Helper()
	user, password, mode := "feed", "feedpass", string(tlsMode)
	if _, _, err := w.app.Sources.Put(w.ctx, a.p, a.inbox.ID, app.SourceInput{Host: &host, Port: &port, Username: &user,
		Password: &password, TLS: &mode}); err != nil {
		w.t.Fatal(err)
	}
}

// What a source's connection met shows as a category, never as the words
// of whatever answered (which would let a caller map the operator's network).
func TestSourceLastErrorIsACategoryWithoutRemoteText(t *testing.T) {
	banner := func(c net.Conn) {
		c.Write([]byte("SSH-2.0-OpenSSH_9.6p1 secret-banner\r\n"))
		time.Sleep(time.Second)
	}
	silent := func(c net.Conn) { time.Sleep(5 * time.Second) }
	closed := func() (string, int) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		return "127.0.0.1", port
	}
	for _, tc := range []struct {
		name, want string
		tls        core.SourceTLS
		at         func() (string, int)
		// dial, when set, replaces the dialer after the PUT's check.
		dial *egress.Dialer
	}{
		{name: "banner", want: core.SourceErrorProtocol, tls: core.SourcePlain, at: func() (string, int) { return hostile(t, banner) }},
		{name: "tls to plaintext", want: core.SourceErrorTLS, tls: core.SourceImplicitTLS, at: func() (string, int) { return hostile(t, banner) }},
		{name: "starttls not offered", want: core.SourceErrorTLS, tls: core.SourceStartTLS, at: func() (string, int) {
			return hostile(t, func(c net.Conn) {
				c.Write([]byte("* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] secret-banner\r\n"))
				buf := make([]byte, 512)
				n, _ := c.Read(buf)
				if tag, _, ok := strings.Cut(string(buf[:n]), " "); ok {
					c.Write([]byte(tag + " BAD secret-banner no STARTTLS here\r\n"))
				}
				time.Sleep(time.Second)
			})
		}},
		{name: "silent", want: core.SourceErrorTimeout, tls: core.SourcePlain, at: func() (string, int) { return hostile(t, silent) }},
		{name: "closed port", want: core.SourceErrorConnect, tls: core.SourcePlain, at: closed},
		{name: "now private", want: core.SourceErrorConnect, tls: core.SourcePlain, at: func() (string, int) { return hostile(t, banner) },
			dial: egress.New(core.DestinationPolicy{}, nil)},
		{name: "name gone", want: core.SourceErrorDNS, tls: core.SourceStartTLS, at: func() (string, int) { return "gone.example", 143 },
			dial: egress.New(core.DestinationPolicy{AllowPrivate: true}, memory.NewResolver())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			dns := memory.NewResolver()
			dns.SetIP("gone.example", "127.0.0.1")
			w.destinations.check = egress.New(core.DestinationPolicy{AllowPrivate: true}, dns)
			alice := w.agent("alice")
			host, port := tc.at()
			w.putSourceAt(alice, host, port, tc.tls)
			if tc.dial != nil {
				w.destinations.dialWith(tc.dial)
			}
			opts := fast
			opts.ConnectTimeout = 300 * time.Millisecond
			w.supervise(opts)
			eventually(t, "a recorded error", func() bool { return w.source(alice).Progress.LastError != "" })
			if got := w.source(alice).Progress.LastError; got != tc.want {
				t.Fatalf("last_error %q; want %q", got, tc.want)
			}
		})
	}
}

// liar is an IMAP server that declares sizes it does not keep: message 2
// says it is 400 MB, message 3 says 100 bytes and then starts a 400 MB
// literal. It counts what it managed to send and which bodies it was asked for.
type liar struct {
	mu        sync.Mutex
	sent      int64 // bytes of message 3's literal written
	asked     []string
	bodyFetch []string
}

const hugeLiteral = 400 << 20

func (l *liar) serve(c net.Conn) {
	msgs := map[int]string{1: mailAt("1@liar", "one"), 3: mailAt("3@liar", "three"), 4: mailAt("4@liar", "four")}
	size := func(uid int) int {
		if uid == 2 {
			return hugeLiteral
		}
		return len(msgs[uid])
	}
	r := bufio.NewReader(c)
	fmt.Fprintf(c, "* OK [CAPABILITY IMAP4rev1] ready\r\n")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		tag, rest, _ := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
		l.mu.Lock()
		l.asked = append(l.asked, rest)
		l.mu.Unlock()
		cmd := strings.ToUpper(rest)
		switch {
		case strings.HasPrefix(cmd, "CAPABILITY"):
			fmt.Fprintf(c, "* CAPABILITY IMAP4rev1\r\n%s OK done\r\n", tag)
		case strings.HasPrefix(cmd, "LOGIN"), strings.HasPrefix(cmd, "NOOP"):
			fmt.Fprintf(c, "%s OK done\r\n", tag)
		case strings.HasPrefix(cmd, "EXAMINE"), strings.HasPrefix(cmd, "SELECT"):
			fmt.Fprintf(c, "* 4 EXISTS\r\n* OK [UIDVALIDITY 7] v\r\n* OK [UIDNEXT 5] n\r\n* FLAGS ()\r\n%s OK [READ-ONLY] done\r\n", tag)
		case strings.HasPrefix(cmd, "UID FETCH") && strings.Contains(cmd, "RFC822.SIZE"):
			for uid := 1; uid <= 4; uid++ {
				if inSet(strings.Fields(rest)[2], uid) {
					fmt.Fprintf(c, "* %d FETCH (UID %d RFC822.SIZE %d)\r\n", uid, uid, size(uid))
				}
			}
			fmt.Fprintf(c, "%s OK done\r\n", tag)
		case strings.HasPrefix(cmd, "UID FETCH"):
			set := strings.Fields(rest)[2]
			l.mu.Lock()
			l.bodyFetch = append(l.bodyFetch, set)
			l.mu.Unlock()
			for uid := 1; uid <= 4; uid++ {
				if !inSet(set, uid) {
					continue
				}
				if uid == 3 {
					fmt.Fprintf(c, "* %d FETCH (UID %d BODY[] {%d}\r\n", uid, uid, hugeLiteral)
					chunk := make([]byte, 64<<10)
					for range hugeLiteral / len(chunk) {
						n, err := c.Write(chunk)
						l.mu.Lock()
						l.sent += int64(n)
						l.mu.Unlock()
						if err != nil {
							return
						}
					}
					return
				}
				fmt.Fprintf(c, "* %d FETCH (UID %d BODY[] {%d}\r\n%s)\r\n", uid, uid, len(msgs[uid]), msgs[uid])
			}
			fmt.Fprintf(c, "%s OK done\r\n", tag)
		case strings.HasPrefix(cmd, "LOGOUT"):
			fmt.Fprintf(c, "* BYE\r\n%s OK done\r\n", tag)
			return
		default:
			fmt.Fprintf(c, "%s BAD unknown\r\n", tag)
		}
	}
}

// inSet reads the UID sets go-imap sends: "a", "a:b", "a:*", joined by commas.
func inSet(set string, uid int) bool {
	for _, r := range strings.Split(set, ",") {
		lo, hi, ranged := strings.Cut(r, ":")
		a, _ := strconv.Atoi(lo)
		b := a
		if ranged {
			if hi == "*" {
				b = 1 << 30
			} else {
				b, _ = strconv.Atoi(hi)
			}
		}
		if a > b {
			a, b = b, a
		}
		if uid >= a && uid <= b {
			return true
		}
	}
	return false
}

// A malicious source cannot make a worker read or hold more than the size
// limit: a message declared over it is never fetched, a body larger than
// declared is cut off at its header (the connection closes, the cursor moves
// past it), and the rest of the folder still arrives.
func TestSourceHostileSizesAreSkippedNotRead(t *testing.T) {
	l := &liar{}
	host, port := hostile(t, l.serve)
	w := newWorld(t)
	alice := w.agent("alice")
	w.putSourceAt(alice, host, port, core.SourcePlain)
	w.supervise(fast)
	got := w.waitForSubjects(alice.inbox, 2)
	if strings.Join(got, ",") != "one,four" {
		t.Fatalf("delivered %v", got)
	}
	eventually(t, "the cursor past every message", func() bool { return w.source(alice).Progress.LastUID == 4 })
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, set := range l.bodyFetch {
		if inSet(set, 2) {
			t.Errorf("the message declared at 400 MB was fetched (%s)", set)
		}
	}
	// The client stops reading at the literal's header: what was written is
	// what the sockets' buffers took, not the 400 MB.
	if l.sent > 32<<20 {
		t.Errorf("the server got %d bytes of the oversized body written", l.sent)
	}
	t.Logf("bytes of the 400 MB literal the server could write before the worker closed: %d", l.sent)
}

// A response that never ends (here, the greeting) is cut off by the byte
// budget, not held in memory: go-imap's client would buffer the whole line.
func TestSourceEndlessResponseIsCutOff(t *testing.T) {
	var mu sync.Mutex
	var sent int64
	host, port := hostile(t, func(c net.Conn) {
		c.Write([]byte("* OK "))
		chunk := []byte(strings.Repeat("a", 64<<10))
		for range 4096 { // 256 MB
			n, err := c.Write(chunk)
			mu.Lock()
			sent += int64(n)
			mu.Unlock()
			if err != nil {
				return
			}
		}
	})
	w := newWorld(t)
	alice := w.agent("alice")
	w.putSourceAt(alice, host, port, core.SourcePlain)
	w.supervise(fast)
	eventually(t, "a recorded error", func() bool { return w.source(alice).Progress.LastError != "" })
	if got := w.source(alice).Progress.LastError; got != core.SourceErrorProtocol {
		t.Fatalf("last_error %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if sent > 16<<20 {
		t.Fatalf("the worker read on: %d bytes written", sent)
	}
}
