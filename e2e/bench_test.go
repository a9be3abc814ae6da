package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/adapters/twilio"
	"github.com/callsign/callsign/adapters/twilio/twiliotest"
	"github.com/callsign/callsign/app"
)

// runConcurrent spreads b.N calls of op over c workers and reports latency
// percentiles and throughput as benchmark metrics.
func runConcurrent(b *testing.B, c int, op func() error) {
	b.Helper()
	var lat latencies
	var wg sync.WaitGroup
	var failures sync.Map
	next := make(chan struct{}, b.N)
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	b.ResetTimer()
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				t := time.Now()
				if err := op(); err != nil {
					failures.Store(err.Error(), true)
					continue
				}
				lat.add(time.Since(t))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	failures.Range(func(k, _ any) bool { b.Fatalf("operation failed: %v", k); return false })
	reportLatencies(b, lat.d, elapsed)
}

func reportLatencies(b *testing.B, d []time.Duration, elapsed time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	pct := func(p float64) float64 {
		i := int(float64(len(d))*p+0.5) - 1
		i = max(0, min(i, len(d)-1))
		return float64(d[i].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
	b.ReportMetric(float64(len(d))/elapsed.Seconds(), "ops/s")
	b.ReportMetric(0, "ns/op") // wall time per op is meaningless across workers
}

// BenchmarkIdentityGet measures an authenticated GET /api/identities/{uuid}/
// over real HTTP, at 1 and 16 concurrent clients, on each database.
func BenchmarkIdentityGet(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			r := start(b, d, nil)
			mgmt := r.bootstrap("bench@example.com")
			var ident struct{ UUID string }
			r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "bench"}, &ident)
			var key struct{ Key string }
			r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID}, &key)
			path := "/api/identities/" + ident.UUID + "/"
			for _, c := range []int{1, 16} {
				b.Run(fmt.Sprintf("clients=%d", c), func(b *testing.B) {
					runConcurrent(b, c, func() error {
						if s, body := r.callRaw("GET", path, key.Key, nil); s != 200 {
							return fmt.Errorf("status %d: %s", s, body)
						}
						return nil
					})
				})
			}
		})
	}
}

// BenchmarkSecrets measures secret create and read (each sealing or opening
// with AES-GCM) over real HTTP, and listing an identity's 10,000 secrets.
// The vault_items quota is raised past what the benchmark stores, so that
// each create still counts the identity's entries.
func BenchmarkSecrets(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			r := start(b, d, map[string]string{"CALLSIGN_QUOTA_VAULT_ITEMS": "1000000"})
			mgmt := r.bootstrap("bench@example.com")
			var ident struct{ UUID string }
			r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "bench"}, &ident)
			var key struct{ Key string }
			r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID}, &key)
			value := strings.Repeat("s", 64) // an API token's size
			var created atomic.Int64
			b.Run("create", func(b *testing.B) {
				runConcurrent(b, 1, func() error {
					n := created.Add(1)
					if s, body := r.callRaw("POST", "/api/secrets/", key.Key, map[string]any{"key": fmt.Sprint("KEY_", n), "value": value}); s != 201 {
						return fmt.Errorf("status %d: %s", s, body)
					}
					return nil
				})
			})
			var one struct{ UUID string }
			r.call("POST", "/api/secrets/", key.Key, map[string]any{"key": "READ_ME", "value": value}, &one)
			b.Run("read", func(b *testing.B) {
				runConcurrent(b, 1, func() error {
					if s, body := r.callRaw("GET", "/api/secrets/"+one.UUID+"/", key.Key, nil); s != 200 {
						return fmt.Errorf("status %d: %s", s, body)
					}
					return nil
				})
			})
			// Fill the identity to 10,000 secrets, then time the full list.
			for n := created.Load() + 1; n < 10_000; n++ {
				if s, body := r.callRaw("POST", "/api/secrets/", key.Key, map[string]any{"key": fmt.Sprint("FILL_", n), "value": value}); s != 201 {
					b.Fatalf("filling: %d %s", s, body)
				}
			}
			b.Run("list-10000", func(b *testing.B) {
				runConcurrent(b, 1, func() error {
					s, body := r.callRaw("GET", "/api/secrets/", key.Key, nil)
					if s != 200 || !strings.HasPrefix(string(body), "[{") {
						return fmt.Errorf("status %d", s)
					}
					return nil
				})
			})
		})
	}
}

// BenchmarkSMS measures the signed Twilio inbound webhook, and listing the
// SMS conversations of an identity holding 100,000 messages across 1,000
// conversations.
func BenchmarkSMS(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			fake := twiliotest.NewServer()
			srv := httptest.NewServer(fake)
			defer srv.Close()
			r := start(b, d, map[string]string{"CALLSIGN_TELEPHONY": "twilio", "TWILIO_ACCOUNT_SID": twiliotest.AccountSID, "TWILIO_AUTH_TOKEN": twiliotest.AuthToken},
				func(deps *app.Deps) {
					deps.Telephony = twilio.New(twilio.Config{AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken, APIBaseURL: srv.URL})
				})
			mgmt := r.bootstrap("sms-bench@example.com")
			var ident struct{ UUID, Phone string }
			r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "bench", "provision_phone": true}, &ident)
			var key struct{ Key string }
			r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID}, &key)
			public := r.svc.Config().BaseURL + "/webhooks/twilio/sms/"
			var seq atomic.Int64
			for _, c := range []int{1, 16} {
				b.Run(fmt.Sprintf("webhook/clients=%d", c), func(b *testing.B) {
					runConcurrent(b, c, func() error {
						n := seq.Add(1)
						form := url.Values{"MessageSid": {fmt.Sprintf("SMb%d", n)}, "AccountSid": {twiliotest.AccountSID}, "From": {fmt.Sprintf("+1415666%04d", n%1000)},
							"To": {ident.Phone}, "Body": {"benchmark message"}}
						req, _ := http.NewRequest("POST", r.baseURL+"/webhooks/twilio/sms/", strings.NewReader(form.Encode()))
						req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
						req.Header.Set("X-Twilio-Signature", twiliotest.Signature(twiliotest.AuthToken, public, form))
						res, err := r.client.Do(req)
						if err != nil {
							return err
						}
						io.Copy(io.Discard, res.Body)
						res.Body.Close()
						if res.StatusCode != 200 {
							return fmt.Errorf("status %d", res.StatusCode)
						}
						return nil
					})
				})
			}
			// Fill to 100,000 messages over 1,000 counterparts, straight through the app.
			ctx := b.Context()
			var wg sync.WaitGroup
			next := make(chan int64)
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := range next {
						_, err := r.svc.App().SMS.Receive(ctx, app.InboundSMS{From: fmt.Sprintf("+1415777%04d", n%1000), To: ident.Phone,
							Body: "filler", SID: fmt.Sprintf("SMfill%d", n)})
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			for n := seq.Load(); n < 100_000; n++ {
				next <- n
			}
			close(next)
			wg.Wait()
			b.Run("sms-inbox/100000-messages", func(b *testing.B) {
				runConcurrent(b, 1, func() error {
					if s, body := r.callRaw("GET", "/api/sms-inbox/", key.Key, nil); s != 200 || len(body) < 1000 {
						return fmt.Errorf("status %d", s)
					}
					return nil
				})
			})
		})
	}
}

// BenchmarkMCPReadEmail compares reading one message through the REST API
// with reading it through the MCP endpoint's read_email tool (a JSON-RPC
// request to /mcp, whose tool calls the same route in-process): the peer
// measured in the same run is the REST call.
func BenchmarkMCPReadEmail(b *testing.B) {
	r := start(b, sqlstore.SQLite, nil)
	ada := r.newAgent(r.bootstrap("bench@example.com"), "Ada")
	sendSMTP(b, r.svc.SMTPAddr(), "alice@example.org", []string{ada.inbox}, plainMail(ada.inbox, "bench@example.org", "Bench"))
	var page apiPage
	r.call("GET", "/api/email-messages/", ada.key, nil, &page)
	id := page.Results[0].ID
	b.Run("rest", func(b *testing.B) {
		for b.Loop() {
			if s, body := r.callRaw("GET", fmt.Sprintf("/api/email-messages/%d/", id), ada.key, nil); s != 200 {
				b.Fatalf("%d %s", s, body)
			}
		}
	})
	b.Run("mcp", func(b *testing.B) {
		cs := r.mcpOverHTTP(ada.key, nil)
		for b.Loop() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_email", Arguments: map[string]any{"message_id": id}})
			if err != nil || res.IsError {
				b.Fatalf("%v %v", err, res)
			}
		}
	})
}
