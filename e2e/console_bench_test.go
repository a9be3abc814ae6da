package e2e

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/url"
	"regexp"
	"sync"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// BenchmarkConsolePages measures each console page a person opens, over
// loopback with a signed-in session, for an identity whose inbox holds
// 100,000 messages (each its own thread, the longest thread list there
// is, all unread) plus a thread of 20, with texts, contacts, vault
// entries and keys beside. The time per operation is the whole request:
// the server's work and the loopback round trip.
func BenchmarkConsolePages(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			r := start(b, d, nil)
			mgmt := r.bootstrap("bench@example.com")
			if _, errOut, code := r.cli(ownerPassword+"\n", "account", "set-password", "--account", "bench@example.com", "--password-stdin"); code != 0 {
				b.Fatalf("set-password: %s", errOut)
			}
			var ident struct{ UUID, Phone string }
			r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "bench", "email_identifier": "bench", "provision_phone": true}, &ident)
			ctx := context.Background()
			inbox, err := r.svc.App().Receiving.ResolveRecipient(ctx, "bench@example.org", "bench@agents.test")
			if err != nil {
				b.Fatal(err)
			}
			deliver := func(n int, inReplyTo string) {
				raw := fmt.Sprintf("From: Sender %d <s%d@example.org>\r\nTo: bench@agents.test\r\nSubject: Message %d\r\nMessage-ID: <m%d@example.org>\r\n", n%500, n%500, n, n)
				if inReplyTo != "" {
					raw += "In-Reply-To: <" + inReplyTo + ">\r\nReferences: <" + inReplyTo + ">\r\n"
				}
				raw += "Date: Sat, 21 Nov 2026 08:00:00 +0000\r\n\r\nHello, this is message " + fmt.Sprint(n) + " of the benchmark's inbox.\r\n"
				if _, err := r.svc.App().Receiving.Deliver(ctx, app.InboundMail{EnvelopeFrom: "s@example.org", Inboxes: []core.Inbox{inbox}, Raw: []byte(raw)}); err != nil {
					b.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			next := make(chan int)
			for range 16 {
				wg.Go(func() {
					for n := range next {
						deliver(n, "")
					}
				})
			}
			for n := range 100_000 {
				next <- n
			}
			close(next)
			wg.Wait()
			for n := 100_000; n < 100_020; n++ {
				deliver(n, fmt.Sprintf("m%d@example.org", n-1))
			}
			for n := range 100 {
				if _, err := r.svc.App().SMS.Receive(ctx, app.InboundSMS{From: fmt.Sprintf("+1415777%04d", n%20), To: ident.Phone, Body: "hello", SID: fmt.Sprintf("SMc%d", n)}); err != nil {
					b.Fatal(err)
				}
			}
			for n := range 50 {
				r.call("POST", "/api/contacts/?identity="+ident.UUID, mgmt, map[string]any{"email": fmt.Sprintf("c%d@example.org", n), "display_name": "Contact"}, nil)
				r.call("POST", "/api/secrets/?identity="+ident.UUID, mgmt, map[string]any{"key": fmt.Sprintf("k%d", n), "value": "v"}, nil)
				r.call("POST", "/api/passwords/?identity="+ident.UUID, mgmt, map[string]any{"domain": fmt.Sprintf("s%d.example", n), "username": "u", "password": "p"}, nil)
			}

			p := r.person(b)
			p.signIn("bench@example.com")
			idPath := "/console/identities/" + ident.UUID + "/"
			_, _, mail := p.get(idPath + "mail/")
			thread := regexp.MustCompile(`href="(/console/threads/[^"]+)"`).FindStringSubmatch(mail)
			_, _, texts := p.get(idPath + "texts/")
			conv := regexp.MustCompile(`href="(/console/conversations/[^"]+)"`).FindStringSubmatch(html.UnescapeString(texts))
			if thread == nil || conv == nil {
				b.Fatal("no thread or conversation to open")
			}
			pages := []struct{ name, path string }{
				{"identities", "/console/"},
				{"mail", idPath + "mail/"},
				{"mail-unread", idPath + "mail/?unread=1"},
				{"mail-page-1000", ""}, // the thousandth page, following "Older" links
				{"thread-of-20", thread[1]},
				{"compose", idPath + "compose/"},
				{"texts", idPath + "texts/"},
				{"conversation", conv[1]},
				{"phone", idPath + "phone/"},
				{"contacts", idPath + "contacts/"},
				{"vault", idPath + "vault/"},
				{"keys", "/console/keys/"},
				{"domains", "/console/domains/"},
				{"pulse", "/console/pulse/?identity=" + url.QueryEscape(ident.UUID)},
			}
			// Follow "Older" 999 times to the thousandth page's address.
			older := regexp.MustCompile(`href="([^"]+)" rel="next"`)
			deep := idPath + "mail/"
			for range 999 {
				_, _, page := p.get(deep)
				m := older.FindStringSubmatch(page)
				if m == nil {
					b.Fatal("no older page")
				}
				deep = html.UnescapeString(m[1])
			}
			pages[3].path = deep
			for _, pg := range pages {
				b.Run(pg.name, func(b *testing.B) {
					for b.Loop() {
						res, err := p.http.Get(r.baseURL + pg.path)
						if err != nil {
							b.Fatal(err)
						}
						_, _ = io.Copy(io.Discard, res.Body)
						res.Body.Close()
						if res.StatusCode != 200 {
							b.Fatalf("%s: %d", pg.path, res.StatusCode)
						}
					}
				})
			}
		})
	}
}
