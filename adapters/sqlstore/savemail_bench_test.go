package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// BenchmarkSaveMailBackendCPU stores batches of new mail (about 4 KB of
// text and HTML, a 5 KB source, each starting a thread, as the ingest
// benchmark's) on PostgreSQL, a batch of a fixed size per call, and reports
// the CPU the database's backends spent per message (utime+stime of those
// serving the store, from /proc: run it on the database's machine). A
// fixed batch takes out of the figure what makes the server benchmark's
// vary on a loaded machine: the group commit's batches shrink as the rate
// falls. Run with enough messages for the clock ticks: -benchtime 200x.
func BenchmarkSaveMailBackendCPU(b *testing.B) {
	if os.Getenv(sqlstoretest.PostgresURLVar) == "" {
		b.Skipf("%s is not set", sqlstoretest.PostgresURLVar)
	}
	ctx := context.Background()
	for _, size := range []int{1, 8, 32} {
		b.Run("batch="+strconv.Itoa(size), func(b *testing.B) {
			dsn := sqlstoretest.URL(b, sqlstore.Postgres)
			u, err := url.Parse(dsn)
			if err != nil {
				b.Fatal(err)
			}
			q := u.Query()
			app := "savemail_" + q.Get("search_path") // unique to this store
			q.Set("application_name", app)
			u.RawQuery = q.Encode()
			db := sqlstoretest.OpenWith(b, u.String(), sqlstore.Options{})
			now := time.Now().UTC()
			acct := core.Account{ID: uuid.NewString(), Email: "bench@example.com", SubscriptionActive: true, CreatedAt: now}
			if err := db.CreateAccount(ctx, acct); err != nil {
				b.Fatal(err)
			}
			ident := core.Identity{ID: uuid.NewString(), AccountID: acct.ID, Name: "bench", Inbox: "bench@agents.test", CreatedAt: now, UpdatedAt: now}
			inboxID, err := db.CreateIdentity(ctx, ident, core.Inbox{UUID: uuid.NewString(), AccountID: acct.ID, IdentityID: ident.ID,
				Email: ident.Inbox, CreatedAt: now}, nil)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewSource(1))
			mail := func(i int) ports.NewMail {
				text := benchWords(rng, 2048)
				html := "<p>" + benchWords(rng, 2048) + "</p>"
				m := core.EmailMessage{AccountID: acct.ID, IdentityID: ident.ID, InboxID: inboxID, Direction: core.Incoming,
					Header: core.Header{MessageID: fmt.Sprintf("%d-%s@bench", i, uuid.NewString()), Subject: benchWords(rng, 40),
						FromEmail: "sender@example.com", To: []string{ident.Inbox}}, Text: text, HTML: html, CreatedAt: now}
				raw := "Subject: " + m.Subject + "\r\n\r\n" + text + "\r\n" + html
				return ports.NewMail{Message: m, NewThreadID: uuid.NewString()[:12], Raw: []byte(raw), Dedupe: true}
			}
			batches := make([][]ports.NewMail, b.N)
			for i := range batches {
				for j := range size {
					batches[i] = append(batches[i], mail(i*size+j))
				}
			}
			if _, err := db.SaveMail(ctx, batches[0]); err != nil { // the connection and its statements made
				b.Fatal(err)
			}
			before := backendTicks(b, app)
			b.ResetTimer()
			for _, batch := range batches[1:] {
				if _, err := db.SaveMail(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			after := backendTicks(b, app)
			var ticks int64
			for pid, t := range after {
				ticks += t - before[pid]
			}
			if n := (b.N - 1) * size; n > 0 {
				b.ReportMetric(float64(ticks)*10_000/float64(n), "db-µs/msg") // a tick is 10 ms
			}
		})
	}
}

// backendTicks answers, per backend serving application app, its CPU time
// in clock ticks.
func backendTicks(b *testing.B, app string) map[int]int64 {
	b.Helper()
	admin, err := sql.Open("pgx", os.Getenv(sqlstoretest.PostgresURLVar))
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	rows, err := admin.Query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	ticks := map[int]int64{}
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatalf("reading the backend's CPU time (is the database on this machine?): %v", err)
		}
		// The fields after the command's closing parenthesis; utime and
		// stime are the 14th and 15th of the line.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks[pid] = u + s
	}
	return ticks
}

// benchWords is about n bytes of words from a mail-like vocabulary.
func benchWords(rng *rand.Rand, n int) string {
	words := strings.Fields(`the agent will follow up on your request regarding invoice payment schedule meeting
		project deadline review approved shipping tracking order account verification password reset team update
		quarterly report budget forecast customer support ticket resolved escalation contract renewal onboarding`)
	var sb strings.Builder
	for sb.Len() < n {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(words[rng.Intn(len(words))])
	}
	return sb.String()
}
