// Package dnstest is an authoritative DNS server for tests (miekg/dns),
// serving UDP and TCP on one loopback port: tests publish records, make
// names fail or answer slowly, and count the questions asked.
package dnstest

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Server serves the records tests give it, for any zone.
type Server struct {
	// Addr is the host:port both transports listen on.
	Addr string

	mu      sync.Mutex
	records map[key][]dns.RR
	rcodes  map[string]int           // a name answered with this code
	delays  map[string]time.Duration // a name answered this late
	queries map[key]int
	servers []*dns.Server
}

type key struct {
	name  string // lower-case, fully qualified
	qtype uint16
}

// Start serves on 127.0.0.1 until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{records: map[key][]dns.RR{}, rcodes: map[string]int{}, delays: map[string]time.Duration{}, queries: map[key]int{}}
	pc, ln := listen(t)
	s.Addr = pc.LocalAddr().String()
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: s}, {Listener: ln, Handler: s}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go srv.ActivateAndServe()
		<-started
		s.servers = append(s.servers, srv)
	}
	t.Cleanup(func() {
		for _, srv := range s.servers {
			srv.Shutdown()
		}
	})
	return s
}

// listen binds UDP and TCP to one free port, trying again when another
// process holds the TCP side of the port the system chose for UDP.
func listen(t testing.TB) (net.PacketConn, net.Listener) {
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, ln
		}
		pc.Close()
	}
	t.Fatal("dnstest: no port free for both UDP and TCP")
	return nil, nil
}

// Add publishes records written as in a zone file, e.g.
// "example.com. 300 IN MX 10 mx.example.com.".
func (s *Server) Add(t testing.TB, records ...string) {
	t.Helper()
	for _, line := range records {
		rr, err := dns.NewRR(line)
		if err != nil || rr == nil {
			t.Fatalf("dnstest: bad record %q: %v", line, err)
		}
		s.put(rr)
	}
}

// AddTXT publishes one TXT record of any length, split into the 255-byte
// strings the wire format needs.
func (s *Server) AddTXT(name string, ttl uint32, value string) {
	var parts []string
	for len(value) > 255 {
		parts, value = append(parts, value[:255]), value[255:]
	}
	parts = append(parts, value)
	s.put(&dns.TXT{Hdr: dns.RR_Header{Name: dns.Fqdn(name), Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: ttl}, Txt: parts})
}

func (s *Server) put(rr dns.RR) {
	h := rr.Header()
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{strings.ToLower(h.Name), h.Rrtype}
	s.records[k] = append(s.records[k], rr)
}

// Remove withdraws every record of a type at a name.
func (s *Server) Remove(name string, qtype uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, key{strings.ToLower(dns.Fqdn(name)), qtype})
}

// Fail answers every question about name with rcode (dns.RcodeServerFailure…);
// dns.RcodeSuccess serves it again.
func (s *Server) Fail(name string, rcode int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rcodes[strings.ToLower(dns.Fqdn(name))] = rcode
}

// Delay answers questions about name only after d.
func (s *Server) Delay(name string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delays[strings.ToLower(dns.Fqdn(name))] = d
}

// Queries counts the questions asked about a name and type.
func (s *Server) Queries(name string, qtype uint16) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[key{strings.ToLower(dns.Fqdn(name)), qtype}]
}

// ServeDNS answers from the published records: the records asked for,
// NOERROR with none when the name has records of other types, NXDOMAIN
// otherwise; both negative answers carry an SOA whose minimum is 60 s.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	reply := new(dns.Msg)
	reply.SetReply(req)
	reply.Authoritative = true
	if len(req.Question) != 1 {
		reply.Rcode = dns.RcodeFormatError
		w.WriteMsg(reply)
		return
	}
	q := req.Question[0]
	k := key{strings.ToLower(q.Name), q.Qtype}
	s.mu.Lock()
	s.queries[k]++
	rcode, failing := s.rcodes[k.name]
	delay := s.delays[k.name]
	answers := append([]dns.RR(nil), s.records[k]...)
	exists := false
	for other := range s.records {
		if other.name == k.name {
			exists = true
			break
		}
	}
	s.mu.Unlock()
	time.Sleep(delay)
	switch {
	case failing && rcode != dns.RcodeSuccess:
		reply.Rcode = rcode
	case len(answers) > 0:
		reply.Answer = answers
	default:
		if !exists {
			reply.Rcode = dns.RcodeNameError
		}
		reply.Ns = []dns.RR{soa(k.name)}
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = int(opt.UDPSize())
		}
		reply.Truncate(size)
	}
	w.WriteMsg(reply)
}

func soa(name string) dns.RR {
	rr, err := dns.NewRR(fmt.Sprintf("%s 60 IN SOA ns.test. hostmaster.test. 1 3600 600 86400 60", name))
	if err != nil {
		panic(err)
	}
	return rr
}
