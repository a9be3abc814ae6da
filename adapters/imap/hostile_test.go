package imap_test

import (
	"net"
	"strings"
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
