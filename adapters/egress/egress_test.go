package egress

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"

	"github.com/callsign/callsign/core"
)

// answers is a resolver whose answers a test sets, counting the lookups.
type answers struct {
	mu      sync.Mutex
	ips     map[string][][]string // successive answers per name
	lookups int
}

func (a *answers) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lookups++
	seq := a.ips[host]
	if len(seq) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	cur := seq[0]
	if len(seq) > 1 {
		a.ips[host] = seq[1:]
	}
	var out []net.IPAddr
	for _, s := range cur {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	return out, nil
}

func listen(t *testing.T) string {
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
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

func TestStrictDialerRefusesThisMachineInEveryNotation(t *testing.T) {
	port := listen(t)
	r := &answers{ips: map[string][][]string{
		"rebind.example":   {{"127.0.0.1"}},
		"mixed.example":    {{"203.0.113.7", "10.0.0.3"}},
		"metadata.example": {{"169.254.169.254"}},
	}}
	d := New(core.DestinationPolicy{}, r)
	for _, host := range []string{"127.0.0.1", "0x7f.1", "2130706433", "017700000001", "localhost", "[::1]", "[::ffff:127.0.0.1]", "rebind.example", "mixed.example", "metadata.example"} {
		addr := host + ":" + port
		conn, err := d.DialContext(context.Background(), "tcp", addr)
		var refused *core.DestinationError
		if !errors.As(err, &refused) {
			if conn != nil {
				conn.Close()
			}
			t.Errorf("dial %s: %v; want a refusal", addr, err)
		}
	}
	if _, err := d.DialContext(context.Background(), "tcp", "nowhere.example:"+port); !isDNS(err) {
		t.Errorf("unknown name: %v; want a DNS error", err)
	}
}

func isDNS(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de)
}

func TestDialerDialsTheAddressItChecked(t *testing.T) {
	port := listen(t)
	// The first answer is the one checked; a second lookup would get a
	// different one, which the dial must never see.
	r := &answers{ips: map[string][][]string{"imap.example": {{"127.0.0.1"}, {"192.0.2.1"}}}}
	d := New(core.DestinationPolicy{AllowPrivate: true}, r)
	conn, err := d.DialContext(context.Background(), "tcp", "imap.example:"+port)
	if err != nil {
		t.Fatalf("allowed dial: %v", err)
	}
	defer conn.Close()
	if got := conn.RemoteAddr().String(); got != "127.0.0.1:"+port {
		t.Errorf("connected to %s", got)
	}
	if r.lookups != 1 {
		t.Errorf("%d lookups for one dial; want 1", r.lookups)
	}
	// Odd notations reach the address they mean, without a lookup.
	c2, err := d.DialContext(context.Background(), "tcp", "0x7f.1:"+port)
	if err != nil {
		t.Fatalf("dial 0x7f.1: %v", err)
	}
	c2.Close()
	if r.lookups != 1 {
		t.Errorf("a numeric host was looked up")
	}
}
