package e2e

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
)

// BenchmarkIngestVerdicts measures SMTP ingest at 16 concurrent connections
// with SPF, DKIM and DMARC checks (CALLSIGN_INBOUND_AUTH=all, a DNS server
// on loopback) against the same ingest with checks off: each message is a
// 4 KiB one signed by bank.example, whose SPF, DKIM key and DMARC policy
// the DNS server publishes.
func BenchmarkIngestVerdicts(b *testing.B) {
	dns, bank := bankDNS(b, "127.0.0.1")
	body := strings.Repeat("A line of a statement, as banks send them, long enough to wrap.\r\n", 64)
	var messages [16][]byte
	for i := range messages {
		raw := fmt.Sprintf("From: Bank <alerts@bank.example>\r\nTo: agent@agents.test\r\nSubject: Statement %d\r\n"+
			"Message-ID: <statement-%d@bank.example>\r\nDate: Mon, 23 Nov 2026 08:00:00 +0000\r\nMIME-Version: 1.0\r\n"+
			"Content-Type: text/plain; charset=utf-8\r\n\r\n%s", i, i, body)
		var err error
		if messages[i], err = bank.sign(raw); err != nil {
			b.Fatal(err)
		}
	}
	for _, d := range sqlstoretest.Dialects() {
		for _, mode := range []string{"off", "all"} {
			b.Run(fmt.Sprintf("%s/auth=%s/c=16", d, mode), func(b *testing.B) {
				r := start(b, d, map[string]string{"CALLSIGN_DNS_RESOLVER": dns.Addr, "CALLSIGN_INBOUND_AUTH": mode})
				mgmt := r.bootstrap("bench@example.com")
				var ident struct{ Inbox string }
				r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "agent"}, &ident)
				ingest(b, r.svc.SMTPAddr(), ident.Inbox, messages[:], 16)
				if mode == "all" {
					var pg apiPage
					r.call("GET", "/api/email-messages/?authenticated=true&limit=1", mgmt, nil, &pg)
					if pg.Count == 0 {
						b.Fatal("no message passed the checks")
					}
				}
			})
		}
	}
}

// ingest sends b.N messages over c connections, each kept for many messages.
func ingest(b *testing.B, addr, rcpt string, messages [][]byte, c int) {
	b.Helper()
	clients := make([]*smtp.Client, c)
	for i := range clients {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		clients[i] = smtp.NewClient(conn)
		if err := clients[i].Hello("mail.bank.example"); err != nil {
			b.Fatal(err)
		}
		defer clients[i].Close()
	}
	next := make(chan int, b.N)
	for i := range b.N {
		next <- i
	}
	close(next)
	var lat latencies
	var wg sync.WaitGroup
	var failed sync.Once
	b.ResetTimer()
	start := time.Now()
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t := time.Now()
				if err := cl.SendMail("bounce@bank.example", []string{rcpt}, strings.NewReader(string(messages[i%len(messages)]))); err != nil {
					failed.Do(func() { b.Errorf("sending: %v", err) })
					return
				}
				lat.add(time.Since(t))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	reportLatencies(b, lat.d, elapsed)
}
