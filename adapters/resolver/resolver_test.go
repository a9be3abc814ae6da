package resolver

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/callsign/callsign/adapters/resolver/dnstest"
)

func newResolver(t *testing.T, srv *dnstest.Server) (*Resolver, *time.Time) {
	t.Helper()
	r, err := New(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	return r, &now
}

func dnsError(t *testing.T, err error) *net.DNSError {
	t.Helper()
	var de *net.DNSError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *net.DNSError", err, err)
	}
	return de
}

func TestAnswersEveryType(t *testing.T) {
	srv := dnstest.Start(t)
	srv.Add(t,
		"example.com. 300 IN MX 20 backup.example.com.",
		"example.com. 300 IN MX 10 mx.example.com.",
		`example.com. 300 IN TXT "v=spf1 " "mx -all"`,
		"mx.example.com. 300 IN A 192.0.2.25",
		"mx.example.com. 300 IN AAAA 2001:db8::25",
		"25.2.0.192.in-addr.arpa. 300 IN PTR mx.example.com.",
	)
	long := "v=DKIM1; k=rsa; p=" + strings.Repeat("A", 600)
	srv.AddTXT("sel._domainkey.example.com", 300, long)
	r, _ := newResolver(t, srv)
	ctx := context.Background()

	mx, err := r.LookupMX(ctx, "Example.COM")
	if err != nil || len(mx) != 2 || mx[0].Host != "mx.example.com." || mx[0].Pref != 10 || mx[1].Pref != 20 {
		t.Fatalf("MX = %v, %v", mx, err)
	}
	txt, err := r.LookupTXT(ctx, "example.com")
	if err != nil || len(txt) != 1 || txt[0] != "v=spf1 mx -all" {
		t.Fatalf("TXT = %q, %v", txt, err)
	}
	txt, err = r.LookupTXT(ctx, "sel._domainkey.example.com.")
	if err != nil || len(txt) != 1 || txt[0] != long {
		t.Fatalf("long TXT = %d records, %v", len(txt), err)
	}
	ips, err := r.LookupIPAddr(ctx, "mx.example.com")
	if err != nil || len(ips) != 2 {
		t.Fatalf("IPs = %v, %v", ips, err)
	}
	names, err := r.LookupAddr(ctx, "192.0.2.25")
	if err != nil || len(names) != 1 || names[0] != "mx.example.com." {
		t.Fatalf("PTR = %v, %v", names, err)
	}
}

// An answer too big for UDP comes back truncated and is asked again over TCP.
func TestTruncatedAnswersGoOverTCP(t *testing.T) {
	srv := dnstest.Start(t)
	for i := range 8 {
		srv.AddTXT("big.example.com", 300, strings.Repeat(string(rune('a'+i)), 400))
	}
	r, _ := newResolver(t, srv)
	txt, err := r.LookupTXT(context.Background(), "big.example.com")
	if err != nil || len(txt) != 8 {
		t.Fatalf("TXT = %d records, %v", len(txt), err)
	}
}

func TestMissingIsNotFoundAndFailureIsTemporary(t *testing.T) {
	srv := dnstest.Start(t)
	srv.Add(t, "example.com. 300 IN A 192.0.2.1")
	srv.Fail("broken.example.com", dns.RcodeServerFailure)
	r, _ := newResolver(t, srv)
	ctx := context.Background()

	for _, name := range []string{"example.com", "nowhere.example.com"} { // no TXT; no such name
		_, err := r.LookupTXT(ctx, name)
		if de := dnsError(t, err); !de.IsNotFound || de.Temporary() {
			t.Errorf("%s: %+v, want not found", name, de)
		}
	}
	_, err := r.LookupMX(ctx, "broken.example.com")
	if de := dnsError(t, err); de.IsNotFound || !de.Temporary() {
		t.Errorf("SERVFAIL: %+v, want temporary", de)
	}
	_, err = r.LookupTXT(ctx, "bad..name")
	if de := dnsError(t, err); !de.IsNotFound {
		t.Errorf("invalid name: %+v", de)
	}
}

func TestSlowServerTimesOut(t *testing.T) {
	srv := dnstest.Start(t)
	srv.Add(t, `slow.example.com. 300 IN TXT "late"`)
	srv.Delay("slow.example.com", time.Second)
	r, _ := newResolver(t, srv)
	r.timeout = 100 * time.Millisecond
	start := time.Now()
	_, err := r.LookupTXT(context.Background(), "slow.example.com")
	if de := dnsError(t, err); !de.IsTimeout || !de.Temporary() {
		t.Errorf("slow server: %+v, want a timeout", de)
	}
	if time.Since(start) > 900*time.Millisecond {
		t.Errorf("the lookup waited for the server (%v)", time.Since(start))
	}
}

// Answers are kept for their TTL, negative ones for the SOA's minimum;
// failures are not kept.
func TestCacheFollowsTTLs(t *testing.T) {
	srv := dnstest.Start(t)
	srv.Add(t, `example.com. 120 IN TXT "v=spf1 -all"`)
	srv.Fail("broken.example.com", dns.RcodeServerFailure)
	r, now := newResolver(t, srv)
	ctx := context.Background()
	ask := func(name string) {
		t.Helper()
		r.LookupTXT(ctx, name)
	}

	ask("example.com")
	ask("example.com")
	if n := srv.Queries("example.com", dns.TypeTXT); n != 1 {
		t.Fatalf("within the TTL: %d queries, want 1", n)
	}
	*now = now.Add(121 * time.Second)
	ask("example.com")
	if n := srv.Queries("example.com", dns.TypeTXT); n != 2 {
		t.Fatalf("after the TTL: %d queries, want 2", n)
	}

	ask("_dmarc.example.com")
	ask("_dmarc.example.com")
	if n := srv.Queries("_dmarc.example.com", dns.TypeTXT); n != 1 {
		t.Fatalf("negative answer: %d queries, want 1", n)
	}
	*now = now.Add(61 * time.Second)
	ask("_dmarc.example.com")
	if n := srv.Queries("_dmarc.example.com", dns.TypeTXT); n != 2 {
		t.Fatalf("after the SOA minimum: %d queries, want 2", n)
	}

	ask("broken.example.com")
	ask("broken.example.com")
	if n := srv.Queries("broken.example.com", dns.TypeTXT); n != 2 {
		t.Fatalf("failures: %d queries, want 2 (not cached)", n)
	}

	// The uncached resolver sees a record as soon as it is published.
	fresh := r.Uncached()
	if _, err := fresh.LookupTXT(ctx, "new.example.com"); !dnsError(t, err).IsNotFound {
		t.Fatalf("before publishing: %v", err)
	}
	srv.Add(t, `new.example.com. 300 IN TXT "here"`)
	if txt, err := fresh.LookupTXT(ctx, "new.example.com"); err != nil || txt[0] != "here" {
		t.Fatalf("after publishing: %q, %v", txt, err)
	}
}

// Askers of the same question at the same time share one query.
func TestConcurrentAskersShareAQuery(t *testing.T) {
	srv := dnstest.Start(t)
	srv.Add(t, `shared.example.com. 300 IN TXT "one"`)
	srv.Delay("shared.example.com", 100*time.Millisecond)
	r, _ := newResolver(t, srv)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if txt, err := r.LookupTXT(context.Background(), "shared.example.com"); err != nil || txt[0] != "one" {
				t.Errorf("TXT = %q, %v", txt, err)
			}
		}()
	}
	wg.Wait()
	if n := srv.Queries("shared.example.com", dns.TypeTXT); n != 1 {
		t.Errorf("%d queries for 16 concurrent askers, want 1", n)
	}
}

// An asker who gives up does not fail the others sharing its query.
func TestOneAskerGivingUpLeavesTheOthers(t *testing.T) {
	srv := dnstest.Start(t)
	srv.Add(t, `shared.example.com. 300 IN TXT "one"`)
	srv.Delay("shared.example.com", 200*time.Millisecond)
	r, _ := newResolver(t, srv)
	impatient, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	done := make(chan error)
	go func() {
		_, err := r.LookupTXT(impatient, "shared.example.com")
		done <- err
	}()
	time.Sleep(5 * time.Millisecond)
	txt, err := r.LookupTXT(context.Background(), "shared.example.com")
	if err != nil || txt[0] != "one" {
		t.Errorf("patient asker: %q, %v", txt, err)
	}
	if err := <-done; err == nil || !dnsError(t, err).Timeout() {
		t.Errorf("impatient asker: %v, want a timeout", err)
	}
}

func TestCacheIsBounded(t *testing.T) {
	srv := dnstest.Start(t)
	r, _ := newResolver(t, srv)
	for i := range MaxEntries + 10 {
		r.store(question{name: strings.Repeat("x", i%50) + ".example.", qtype: uint16(i)}, answer{notFound: true, expires: r.now().Add(time.Minute)})
	}
	if len(r.cache) > MaxEntries {
		t.Errorf("cache holds %d entries, more than %d", len(r.cache), MaxEntries)
	}
}
