package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
)

// benchMail is one small message per index.
func benchMail(i int) []byte {
	return fmt.Appendf(nil, "From: a@example.org\r\nTo: agent@agents.test\r\nSubject: Bench %d\r\nMessage-ID: <bench-%d-%d@example.org>\r\n\r\n%s",
		i, i, time.Now().UnixNano(), strings.Repeat("A line of a message body, as people write them.\r\n", 32))
}

// createdAt reads an event's created_dt from its JSON (zero if it has none).
func createdAt(body []byte) time.Time {
	var e struct {
		CreatedDT time.Time `json:"created_dt"`
	}
	_ = json.Unmarshal(body, &e)
	return e.CreatedDT
}

// BenchmarkIngestWebhook is SMTP ingest (16 connections) without and with
// one webhook endpoint (a local receiver answering 204) wanting every
// event: the endpoint's cost is the delivery rows written in the mail's
// transaction and the worker's attempts running beside ingest.
func BenchmarkIngestWebhook(b *testing.B) {
	messages := make([][]byte, 16)
	for i := range messages {
		messages[i] = benchMail(i)
	}
	for _, d := range sqlstoretest.Dialects() {
		for _, hooks := range []int{0, 1} {
			b.Run(fmt.Sprintf("%s/webhooks=%d/c=16", d, hooks), func(b *testing.B) {
				r := start(b, d, map[string]string{"CALLSIGN_WEBHOOK_ALLOW_PRIVATE": "true"})
				mgmt := r.bootstrap("bench@example.com")
				var ident struct{ Inbox string }
				r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "agent"}, &ident)
				if hooks == 1 {
					rec := newReceiver(b, "127.0.0.1:0", 204)
					if s := r.call("POST", "/api/webhooks/", mgmt, map[string]any{"url": rec.url()}, nil); s != 201 {
						b.Fatalf("webhook: %d", s)
					}
				}
				ingest(b, r.svc.SMTPAddr(), ident.Inbox, messages, 16)
			})
		}
	}
}

// BenchmarkEventToWebhook measures from an event's created_dt (its commit)
// to its signed POST arriving at a local receiver, one mail at a time.
func BenchmarkEventToWebhook(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			r := start(b, d, map[string]string{"CALLSIGN_WEBHOOK_ALLOW_PRIVATE": "true"})
			mgmt := r.bootstrap("bench@example.com")
			var ident struct{ Inbox string }
			r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "agent"}, &ident)
			rec := newReceiver(b, "127.0.0.1:0", 204)
			r.call("POST", "/api/webhooks/", mgmt, map[string]any{"url": rec.url(), "event_types": []string{"email.received"}}, nil)
			var lat []time.Duration
			b.ResetTimer()
			begin := time.Now()
			for i := range b.N {
				sendSMTP(b, r.svc.SMTPAddr(), "a@example.org", []string{ident.Inbox}, string(benchMail(i)))
				got := rec.wait(i + 1)
				arrived := time.Now()
				lat = append(lat, arrived.Sub(createdAt([]byte(got.Body))))
			}
			elapsed := time.Since(begin)
			b.StopTimer()
			reportLatencies(b, lat, elapsed)
		})
	}
}

// vmRSS is this process's resident set in KiB (Linux), 0 elsewhere.
func vmRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkEventToSSE opens BENCH_STREAMS (default 1,000) event streams on
// one instance, then measures from each event's created_dt to its arrival
// on every stream, one mail at a time. rss_MiB is what opening the streams
// added to the process's resident set: server and client sides together,
// since both run in this process.
func BenchmarkEventToSSE(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("BENCH_STREAMS")); err == nil && v > 0 {
		n = v
	}
	for _, d := range sqlstoretest.Dialects() {
		b.Run(fmt.Sprintf("%s/streams=%d", d, n), func(b *testing.B) {
			// One key opens them all: the caps per key and per account (10
			// and 100 by default) are raised to n.
			r := start(b, d, map[string]string{"CALLSIGN_MAX_STREAMS_PER_KEY": strconv.Itoa(n),
				"CALLSIGN_MAX_STREAMS_PER_ACCOUNT": strconv.Itoa(n)})
			mgmt := r.bootstrap("bench@example.com")
			var ident struct{ Inbox string }
			r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "agent"}, &ident)
			var cursor struct{ Results []struct{ ID string } }
			r.call("GET", "/api/events/?limit=200", mgmt, nil, &cursor)
			last := cursor.Results[len(cursor.Results)-1].ID
			before := vmRSS()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
			type arrival struct{ at, created time.Time }
			arrivals := make(chan arrival, n*4)
			var wg sync.WaitGroup
			var opened sync.WaitGroup
			for range n {
				req, _ := http.NewRequest("GET", r.baseURL+"/api/events/stream/?types=email.received&after="+last, nil)
				req.Header.Set("Authorization", "Bearer "+mgmt)
				res, err := client.Do(req)
				if err != nil || res.StatusCode != 200 {
					b.Fatalf("stream: %v %v", err, res)
				}
				b.Cleanup(func() { res.Body.Close() })
				wg.Add(1)
				opened.Add(1)
				go func() {
					defer wg.Done()
					rd := bufio.NewReader(res.Body)
					first := true
					for {
						line, err := rd.ReadBytes('\n')
						if err != nil {
							return
						}
						if first {
							first = false
							opened.Done()
						}
						if data, ok := strings.CutPrefix(string(line), "data: "); ok {
							arrivals <- arrival{at: time.Now(), created: createdAt([]byte(data))}
						}
					}
				}()
			}
			opened.Wait()
			rss := float64(vmRSS()-before) / 1024
			var lat []time.Duration
			b.ResetTimer()
			begin := time.Now()
			for i := range b.N {
				sendSMTP(b, r.svc.SMTPAddr(), "a@example.org", []string{ident.Inbox}, string(benchMail(i)))
				for range n {
					a := <-arrivals
					lat = append(lat, a.at.Sub(a.created))
				}
			}
			elapsed := time.Since(begin)
			b.StopTimer()
			reportLatencies(b, lat, elapsed)
			b.ReportMetric(rss, "rss_MiB") // after ResetTimer, which drops reported metrics
		})
	}
}

// BenchmarkEventsAfter measures GET /api/events/?after=<random id> (a page
// of 50) with BENCH_EVENTS (default 1,000,000) events in the account's log,
// written straight into the table (the read does not care how they came).
func BenchmarkEventsAfter(b *testing.B) {
	total := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("BENCH_EVENTS")); err == nil && v > 0 {
		total = v
	}
	for _, d := range sqlstoretest.Dialects() {
		b.Run(fmt.Sprintf("%s/events=%d", d, total), func(b *testing.B) {
			r := start(b, d, nil)
			mgmt := r.bootstrap("bench@example.com")
			var ident struct{ UUID string }
			r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "agent"}, &ident)
			fillEvents(b, r, d, total)
			var i atomic.Int64
			runConcurrent(b, 4, func() error {
				after := (i.Add(1) * 7919) % int64(total-60)
				req, _ := http.NewRequest("GET", r.baseURL+"/api/events/?after="+strconv.FormatInt(after, 10), nil)
				req.Header.Set("Authorization", "Bearer "+mgmt)
				res, err := r.client.Do(req)
				if err != nil {
					return err
				}
				res.Body.Close()
				if res.StatusCode != 200 {
					return fmt.Errorf("status %d", res.StatusCode)
				}
				return nil
			})
		})
	}
}

// fillEvents writes n events of a realistic size into the one account's
// log, after what it holds.
func fillEvents(b *testing.B, r *running, d sqlstore.Dialect, n int) {
	b.Helper()
	driver, url := "pgx", r.env["CALLSIGN_DATABASE_URL"]
	if d == sqlstore.SQLite {
		driver, url = "sqlite", "file:"+url+"?_pragma=busy_timeout(10000)"
	}
	db, err := sqlx.Open(driver, url)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var account string
	var seq int64
	if err := db.QueryRow(`SELECT id, event_seq FROM accounts`).Scan(&account, &seq); err != nil {
		b.Fatal(err)
	}
	data := `{"id":1,"url":"http://127.0.0.1/api/email-messages/1/","inbox":1,"thread_id":"bench","subject":"` + strings.Repeat("x", 120) + `","preview":"` + strings.Repeat("y", 200) + `"}`
	series := `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $3) SELECT i FROM n`
	if d == sqlstore.Postgres {
		series = `SELECT generate_series(1, $3) AS i`
	}
	q := `INSERT INTO events (account_id, seq, identity_id, type, created_at, data)
		SELECT $1, $2 + i, NULL, 'email.received', $4, $5 FROM (` + series + `) AS s`
	if d == sqlstore.SQLite {
		q = strings.NewReplacer("$1", "?1", "$2", "?2", "$3", "?3", "$4", "?4", "$5", "?5").Replace(q)
	}
	if _, err := db.Exec(q, account, seq, n, time.Now().UnixMicro(), data); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(strings.Replace(`UPDATE accounts SET event_seq = event_seq + $1`, "$1", map[bool]string{true: "?", false: "$1"}[d == sqlstore.SQLite], 1), n); err != nil {
		b.Fatal(err)
	}
}
