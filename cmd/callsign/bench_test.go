package main

import (
	"bytes"
	"encoding/base64"
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

	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/adapters/twilio"
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
func BenchmarkSecrets(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			r := start(b, d, nil)
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

// benchMessage is a realistic message: multipart/alternative text and HTML
// of about 4 KiB, and with attachKB > 0 a base64 attachment of that size,
// like the team's smtpload generator sends.
func benchMessage(i, attachKB int, to string) string {
	para := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit, café naïve.\r\n", 30)
	var b strings.Builder
	fmt.Fprintf(&b, "From: Load <load@example.org>\r\nTo: %s\r\nSubject: Message %d\r\nMessage-ID: <%d.%d@bench.example>\r\n", to, i, i, time.Now().UnixNano())
	b.WriteString("Date: Sat, 21 Nov 2026 08:00:00 +0000\r\nMIME-Version: 1.0\r\n")
	alt := "--alt\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n" + para + "\r\n" +
		"--alt\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>" + para + "</p>\r\n--alt--\r\n"
	if attachKB == 0 {
		b.WriteString("Content-Type: multipart/alternative; boundary=alt\r\n\r\n" + alt)
		return b.String()
	}
	b.WriteString("Content-Type: multipart/mixed; boundary=mix\r\n\r\n--mix\r\nContent-Type: multipart/alternative; boundary=alt\r\n\r\n" + alt)
	b.WriteString("--mix\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"data.bin\"\r\nContent-Transfer-Encoding: base64\r\n\r\n")
	enc := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{byte(i)}, attachKB<<10))
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n--mix--\r\n")
	return b.String()
}

// BenchmarkSMTPIngest delivers messages over loopback SMTP connections and
// reports throughput and the latency from MAIL FROM to the final 250.
func BenchmarkSMTPIngest(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			r := start(b, d, nil)
			mgmt := r.bootstrap("ingest@example.com")
			var rcpts []string
			for i := range 4 {
				var ident struct{ Inbox string }
				r.call("POST", "/api/identities/", mgmt, map[string]any{"name": fmt.Sprint("agent", i)}, &ident)
				rcpts = append(rcpts, ident.Inbox)
			}
			for _, attach := range []int{0, 20} {
				for _, c := range []int{1, 4, 16} {
					b.Run(fmt.Sprintf("attach=%dKiB/conns=%d", attach, c), func(b *testing.B) {
						clients := make(chan *smtp.Client, c)
						for range c {
							cl, err := smtp.Dial(r.svc.smtpLn.Addr().String())
							if err != nil {
								b.Fatal(err)
							}
							defer cl.Close()
							clients <- cl
						}
						var n atomic.Int64
						runConcurrent(b, c, func() error {
							cl := <-clients
							defer func() { clients <- cl }()
							i := int(n.Add(1))
							to := rcpts[i%len(rcpts)]
							return cl.SendMail("load@example.org", []string{to}, strings.NewReader(benchMessage(i, attach, to)))
						})
					})
				}
			}
		})
	}
}

// BenchmarkSMS measures the signed Twilio inbound webhook, and listing the
// SMS conversations of an identity holding 100,000 messages across 1,000
// conversations.
func BenchmarkSMS(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			fake := &fakeTwilio{numbers: map[string]url.Values{}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			r := start(b, d, map[string]string{"CALLSIGN_TELEPHONY": "twilio", "TWILIO_ACCOUNT_SID": fakeSID, "TWILIO_AUTH_TOKEN": fakeToken},
				func(deps *app.Deps) {
					deps.Telephony = twilio.New(twilio.Config{AccountSID: fakeSID, AuthToken: fakeToken, APIBaseURL: srv.URL})
				})
			mgmt := r.bootstrap("sms-bench@example.com")
			var ident struct{ UUID, Phone string }
			r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "bench", "provision_phone": true}, &ident)
			var key struct{ Key string }
			r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID}, &key)
			public := r.svc.cfg.BaseURL + "/webhooks/twilio/sms/"
			var seq atomic.Int64
			for _, c := range []int{1, 16} {
				b.Run(fmt.Sprintf("webhook/clients=%d", c), func(b *testing.B) {
					runConcurrent(b, c, func() error {
						n := seq.Add(1)
						form := url.Values{"MessageSid": {fmt.Sprintf("SMb%d", n)}, "AccountSid": {fakeSID}, "From": {fmt.Sprintf("+1415666%04d", n%1000)},
							"To": {ident.Phone}, "Body": {"benchmark message"}}
						req, _ := http.NewRequest("POST", r.baseURL+"/webhooks/twilio/sms/", strings.NewReader(form.Encode()))
						req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
						req.Header.Set("X-Twilio-Signature", sign(public, form))
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
						_, err := r.svc.app.SMS.Receive(ctx, app.InboundSMS{From: fmt.Sprintf("+1415777%04d", n%1000), To: ident.Phone,
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
