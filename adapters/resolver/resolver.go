// Package resolver is the DNS port over miekg/dns: it asks the system's
// name servers (/etc/resolv.conf) or one configured server, keeps answers
// for as long as their TTL says (negative answers as long as the zone's SOA
// says, RFC 2308), lets concurrent askers of one question share one query,
// and gives every lookup at most Timeout.
//
// net.Resolver would do the asking, but it hides TTLs, and caching by TTL is
// what lets inbound mail checks add at most one round trip per domain.
package resolver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sync/singleflight"

	"github.com/callsign/callsign/ports"
)

// Timeout bounds one lookup, every server and retry included.
const Timeout = 2 * time.Second

// MaxEntries bounds the cache; past it, expired answers go first, then any.
const MaxEntries = 10000

// The TTLs an answer is kept for are bounded: a zone asking for a week is
// still asked again within the hour, and a negative answer without an SOA
// (which RFC 2308 says to keep for none) is kept a little, not asked for
// again on every message.
const (
	maxTTL         = time.Hour
	maxNegativeTTL = 15 * time.Minute
	noSOATTL       = time.Minute
)

// Resolver answers lookups; it is safe for concurrent use.
type Resolver struct {
	servers []string
	timeout time.Duration
	udp     *dns.Client
	tcp     *dns.Client
	now     func() time.Time

	flight singleflight.Group
	mu     sync.Mutex
	cache  map[question]answer // nil: answers are not kept
}

var _ ports.Resolver = (*Resolver)(nil)

type question struct {
	name  string // lower-case, fully qualified
	qtype uint16
}

// answer is a cached reply: records of the asked type, or none (notFound).
type answer struct {
	records  []dns.RR
	notFound bool
	expires  time.Time
}

// New asks server (an IP address and port, as config checks
// CALLSIGN_DNS_RESOLVER) or, when server is "", the name servers of
// /etc/resolv.conf.
func New(server string) (*Resolver, error) {
	var servers []string
	if server != "" {
		if _, _, err := net.SplitHostPort(server); err != nil {
			return nil, fmt.Errorf("%q is not host:port", server)
		}
		servers = []string{server}
	} else {
		conf, err := dns.ClientConfigFromFile("/etc/resolv.conf")
		if err != nil {
			return nil, fmt.Errorf("reading the system's name servers: %w", err)
		}
		for _, s := range conf.Servers {
			servers = append(servers, net.JoinHostPort(s, conf.Port))
		}
		if len(servers) == 0 {
			servers = []string{"127.0.0.1:53"} // what resolv.conf(5) says an empty file means
		}
	}
	return &Resolver{
		servers: servers,
		timeout: Timeout,
		udp:     &dns.Client{Net: "udp", Timeout: Timeout},
		tcp:     &dns.Client{Net: "tcp", Timeout: Timeout},
		now:     time.Now,
		cache:   map[question]answer{},
	}, nil
}

// Uncached is a resolver asking the same servers that keeps no answer:
// for checks whose point is to see a record just published (a cached "no
// such record" would hide it for the zone's negative TTL).
func (r *Resolver) Uncached() *Resolver {
	return &Resolver{servers: r.servers, timeout: r.timeout, udp: r.udp, tcp: r.tcp, now: r.now}
}

// LookupTXT returns each TXT record's strings joined, as net.LookupTXT does.
func (r *Resolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	rrs, err := r.lookup(ctx, name, dns.TypeTXT)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		out = append(out, strings.Join(rr.(*dns.TXT).Txt, ""))
	}
	return out, nil
}

// LookupMX returns the MX records by preference; hosts end in a dot.
func (r *Resolver) LookupMX(ctx context.Context, name string) ([]*net.MX, error) {
	rrs, err := r.lookup(ctx, name, dns.TypeMX)
	if err != nil {
		return nil, err
	}
	out := make([]*net.MX, 0, len(rrs))
	for _, rr := range rrs {
		mx := rr.(*dns.MX)
		out = append(out, &net.MX{Host: mx.Mx, Pref: mx.Preference})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pref < out[j].Pref })
	return out, nil
}

// LookupIPAddr asks for A and AAAA records at once. Either family found is
// an answer; none found is NotFound unless one of the two failed.
func (r *Resolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []net.IPAddr{{IP: ip}}, nil
	}
	var v6 []dns.RR
	var v6err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		v6, v6err = r.lookup(ctx, host, dns.TypeAAAA)
	}()
	v4, v4err := r.lookup(ctx, host, dns.TypeA)
	<-done
	var out []net.IPAddr
	for _, rr := range append(v4, v6...) {
		switch a := rr.(type) {
		case *dns.A:
			out = append(out, net.IPAddr{IP: a.A})
		case *dns.AAAA:
			out = append(out, net.IPAddr{IP: a.AAAA})
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	if v4err != nil && !isNotFound(v4err) {
		return nil, v4err
	}
	if v6err != nil && !isNotFound(v6err) {
		return nil, v6err
	}
	return nil, notFound(host)
}

// LookupAddr returns the PTR names of an address.
func (r *Resolver) LookupAddr(ctx context.Context, addr string) ([]string, error) {
	arpa, err := dns.ReverseAddr(addr)
	if err != nil {
		return nil, &net.DNSError{Err: "unrecognized address", Name: addr}
	}
	rrs, err := r.lookup(ctx, arpa, dns.TypePTR)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		out = append(out, rr.(*dns.PTR).Ptr)
	}
	return out, nil
}

// lookup answers from the cache, or asks once for every concurrent asker.
func (r *Resolver) lookup(ctx context.Context, name string, qtype uint16) ([]dns.RR, error) {
	q := question{name: dns.Fqdn(strings.ToLower(name)), qtype: qtype}
	if _, ok := dns.IsDomainName(q.name); !ok || strings.HasPrefix(q.name, ".") {
		return nil, &net.DNSError{Err: "invalid domain name", Name: name, IsNotFound: true}
	}
	if a, ok := r.cached(q); ok {
		return a.result(name)
	}
	key := fmt.Sprintf("%d %s", q.qtype, q.name)
	// The shared query has its own deadline, so one asker giving up does
	// not fail the others; each asker still stops waiting when it must.
	ch := r.flight.DoChan(key, func() (any, error) {
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
		defer cancel()
		a, err := r.ask(qctx, q)
		if err != nil {
			return nil, err
		}
		r.store(q, a)
		return a, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(answer).result(name)
	case <-ctx.Done():
		return nil, &net.DNSError{Err: ctx.Err().Error(), Name: name, IsTimeout: true, IsTemporary: true}
	}
}

func (a answer) result(name string) ([]dns.RR, error) {
	if a.notFound {
		return nil, notFound(name)
	}
	return a.records, nil
}

// ask queries the servers in turn until one gives an answer (records or a
// definite "none"). Each server gets an equal share of the deadline.
func (r *Resolver) ask(ctx context.Context, q question) (answer, error) {
	share := r.timeout / time.Duration(len(r.servers))
	var last error
	for _, server := range r.servers {
		sctx, cancel := context.WithTimeout(ctx, share)
		a, err := r.askOne(sctx, q, server)
		cancel()
		if err == nil {
			return a, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return answer{}, last
}

func (r *Resolver) askOne(ctx context.Context, q question, server string) (answer, error) {
	m := new(dns.Msg)
	m.SetQuestion(q.name, q.qtype)
	m.RecursionDesired = true
	m.SetEdns0(1232, false) // the DNS flag day's size: no fragmentation
	reply, _, err := r.udp.ExchangeContext(ctx, m, server)
	if err == nil && reply.Truncated {
		reply, _, err = r.tcp.ExchangeContext(ctx, m, server)
	}
	if err != nil {
		timeout := errors.Is(err, context.DeadlineExceeded)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			timeout = true
		}
		return answer{}, &net.DNSError{Err: err.Error(), Name: q.name, Server: server, IsTimeout: timeout, IsTemporary: true}
	}
	now := r.now()
	switch reply.Rcode {
	case dns.RcodeSuccess:
		var records []dns.RR
		ttl := maxTTL
		for _, rr := range reply.Answer {
			// A CNAME chain's records bound the answer's life as well.
			if d := time.Duration(rr.Header().Ttl) * time.Second; d < ttl {
				ttl = d
			}
			if rr.Header().Rrtype == q.qtype {
				records = append(records, rr)
			}
		}
		if len(records) == 0 {
			return answer{notFound: true, expires: now.Add(negativeTTL(reply))}, nil
		}
		return answer{records: records, expires: now.Add(ttl)}, nil
	case dns.RcodeNameError:
		return answer{notFound: true, expires: now.Add(negativeTTL(reply))}, nil
	default:
		return answer{}, &net.DNSError{Err: "server answered " + dns.RcodeToString[reply.Rcode], Name: q.name, Server: server, IsTemporary: true}
	}
}

// negativeTTL is how long "no such record" holds: the SOA's minimum or its
// own TTL, whichever is less (RFC 2308 §5).
func negativeTTL(reply *dns.Msg) time.Duration {
	for _, rr := range reply.Ns {
		if soa, ok := rr.(*dns.SOA); ok {
			ttl := min(soa.Hdr.Ttl, soa.Minttl)
			return min(time.Duration(ttl)*time.Second, maxNegativeTTL)
		}
	}
	return noSOATTL
}

func (r *Resolver) cached(q question) (answer, bool) {
	if r.cache == nil {
		return answer{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.cache[q]
	if !ok || !r.now().Before(a.expires) {
		return answer{}, false
	}
	return a, true
}

func (r *Resolver) store(q question, a answer) {
	now := r.now()
	if r.cache == nil || !now.Before(a.expires) {
		return // not kept, or a TTL of zero: use once, keep never
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cache) >= MaxEntries {
		for k, v := range r.cache {
			if !now.Before(v.expires) {
				delete(r.cache, k)
			}
		}
		for k := range r.cache { // still full: drop any tenth
			if len(r.cache) < MaxEntries*9/10 {
				break
			}
			delete(r.cache, k)
		}
	}
	r.cache[q] = a
}

func notFound(name string) error {
	return &net.DNSError{Err: "no such record", Name: name, IsNotFound: true}
}

func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}
