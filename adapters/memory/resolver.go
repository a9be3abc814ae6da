package memory

import (
	"context"
	"net"
	"strings"
	"sync"
)

// Resolver is a ports.Resolver over records set by tests: names without
// records are not found, and names marked failing fail temporarily.
type Resolver struct {
	mu      sync.Mutex
	txt     map[string][]string
	mx      map[string][]*net.MX
	ips     map[string][]net.IPAddr
	failing map[string]bool
}

// NewResolver makes a resolver without records.
func NewResolver() *Resolver {
	return &Resolver{txt: map[string][]string{}, mx: map[string][]*net.MX{}, ips: map[string][]net.IPAddr{}, failing: map[string]bool{}}
}

func key(name string) string { return strings.TrimSuffix(strings.ToLower(name), ".") }

// SetTXT publishes the TXT records of name (none removes them).
func (r *Resolver) SetTXT(name string, values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.txt[key(name)] = values
}

// SetMX publishes the MX hosts of name, in order of preference.
func (r *Resolver) SetMX(name string, hosts ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var mx []*net.MX
	for i, h := range hosts {
		mx = append(mx, &net.MX{Host: h + ".", Pref: uint16(10 * (i + 1))})
	}
	r.mx[key(name)] = mx
}

// SetIP publishes the addresses (A and AAAA) of name.
func (r *Resolver) SetIP(name string, ips ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []net.IPAddr
	for _, ip := range ips {
		out = append(out, net.IPAddr{IP: net.ParseIP(ip)})
	}
	r.ips[key(name)] = out
}

// Fail makes every lookup of name fail temporarily (or not).
func (r *Resolver) Fail(name string, failing bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failing[key(name)] = failing
}

func lookup[T any](r *Resolver, m map[string][]T, name string) ([]T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failing[key(name)] {
		return nil, &net.DNSError{Err: "server misbehaving", Name: name, IsTemporary: true}
	}
	if v := m[key(name)]; len(v) > 0 {
		return append([]T(nil), v...), nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
}

func (r *Resolver) LookupTXT(_ context.Context, name string) ([]string, error) {
	return lookup(r, r.txt, name)
}

func (r *Resolver) LookupMX(_ context.Context, name string) ([]*net.MX, error) {
	return lookup(r, r.mx, name)
}

func (r *Resolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []net.IPAddr{{IP: ip}}, nil
	}
	return lookup(r, r.ips, host)
}

func (r *Resolver) LookupAddr(_ context.Context, addr string) ([]string, error) {
	return nil, &net.DNSError{Err: "no such host", Name: addr, IsNotFound: true}
}
