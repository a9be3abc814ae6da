package e2e

import (
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/smtp"
	"net/textproto"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/imap/dovecottest"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
)

// balancer stands in for an orchestrator's load balancer in front of two
// instances: it sends work only to an instance whose readiness check last
// answered 200, and polls every instance often.
type balancer struct {
	mu        sync.Mutex
	instances [2]*running
	ready     [2]bool
	next      atomic.Int64
}

func (b *balancer) set(i int, r *running) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.instances[i], b.ready[i] = r, false
}

// pick is a ready instance, taking turns; nil when none is.
func (b *balancer) pick() *running {
	b.mu.Lock()
	defer b.mu.Unlock()
	for range 2 {
		i := b.next.Add(1) % 2
		if b.ready[i] {
			return b.instances[i]
		}
	}
	return nil
}

// isReady reports whether r is in and answered its last readiness check.
func (b *balancer) isReady(r *running) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.instances[0] == r && b.ready[0] || b.instances[1] == r && b.ready[1]
}

// watch polls each instance's readiness until stop closes.
func (b *balancer) watch(stop <-chan struct{}) {
	client := &http.Client{Timeout: time.Second}
	for {
		for i := range 2 {
			b.mu.Lock()
			r := b.instances[i]
			b.mu.Unlock()
			ok := false
			if resp, err := client.Get(r.baseURL + "/api/health/ready/"); err == nil {
				ok = resp.StatusCode == 200
				resp.Body.Close()
			}
			b.mu.Lock()
			if b.instances[i] == r {
				b.ready[i] = ok
			}
			b.mu.Unlock()
		}
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestRollingRestartLosesNothing: two instances on one PostgreSQL database
// behind a balancer that follows /api/health/ready/, restarted one after
// the other under steady SMTP ingest and API reads. No acknowledged message
// is lost and no request is answered 5xx; the counts are logged.
func TestRollingRestartLosesNothing(t *testing.T) {
	t.Parallel()
	if !slices.Contains(sqlstoretest.Dialects(), sqlstore.Postgres) {
		if os.Getenv(dovecottest.RequireAllVar) == "1" {
			t.Fatalf("PostgreSQL is not configured (%s), and %s=1 requires it", sqlstoretest.PostgresURLVar, dovecottest.RequireAllVar)
		}
		t.Skip("PostgreSQL is not configured (" + sqlstoretest.PostgresURLVar + ")")
	}
	// One database and one data directory (the vault and session keys) for both.
	env := map[string]string{"CALLSIGN_DATABASE_URL": sqlstoretest.URL(t, sqlstore.Postgres), "CALLSIGN_DATA_DIR": t.TempDir()}
	a := start(t, sqlstore.Postgres, env)
	b := start(t, sqlstore.Postgres, env)
	mgmt := a.bootstrap("rolling@example.com")
	var ident struct{ UUID, Inbox string }
	a.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Rolling"}, &ident)

	lb := &balancer{}
	lb.set(0, a)
	lb.set(1, b)
	stop := make(chan struct{})
	var workers sync.WaitGroup
	workers.Add(1)
	go func() { defer workers.Done(); lb.watch(stop) }()

	var (
		mu                                 sync.Mutex
		acked                              []string
		sent, tempFailed, refused, api5xx  atomic.Int64
		apiOK, apiTransport, smtpTransport atomic.Int64
	)
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	workers.Add(2)
	go func() { // ingest: ten messages a connection, to a ready instance
		defer workers.Done()
		for !stopped() {
			r := lb.pick()
			if r == nil {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			c, err := smtp.Dial(r.svc.SMTPAddr())
			if err != nil {
				smtpTransport.Add(1)
				continue
			}
			for range 10 {
				id := fmt.Sprintf("rolling-%d@example.org", sent.Add(1))
				err := send(c, ident.Inbox, id)
				var te *textproto.Error
				switch {
				case err == nil:
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
					continue
				case errors.As(err, &te) && te.Code/100 == 4:
					tempFailed.Add(1) // a sender retries later: not lost
				case errors.As(err, &te):
					refused.Add(1)
					t.Errorf("%s refused: %v", id, err)
				default:
					smtpTransport.Add(1)
				}
				break
			}
			c.Close()
		}
	}()
	go func() { // API reads, to a ready instance
		defer workers.Done()
		for !stopped() {
			r := lb.pick()
			if r == nil {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			req, _ := http.NewRequest("GET", r.baseURL+"/api/email-messages/?limit=5&identity="+ident.UUID, nil)
			req.Header.Set("Authorization", "Bearer "+mgmt)
			resp, err := r.client.Do(req)
			if err != nil {
				apiTransport.Add(1)
				continue
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				api5xx.Add(1)
				t.Errorf("GET answered %d", resp.StatusCode)
			} else {
				apiOK.Add(1)
			}
		}
	}()

	settle := func() { time.Sleep(time.Second) }
	restart := func(i int, old *running) {
		old.stop()
		fresh := start(t, sqlstore.Postgres, env)
		lb.set(i, fresh)
		poll(t, "the restarted instance ready", func() bool { return lb.isReady(fresh) })
	}
	settle()
	restart(0, a)
	settle()
	restart(1, b)
	settle()
	close(stop)
	workers.Wait()

	db, err := sql.Open("pgx", env["CALLSIGN_DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stored := map[string]bool{}
	rows, err := db.Query("SELECT message_id FROM email_messages")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		stored[id] = true
	}
	rows.Close()
	lost := 0
	for _, id := range acked {
		if !stored[id] {
			lost++
		}
	}
	t.Logf("rolling restart of 2 instances: %d messages acknowledged, %d lost, %d answered 4xx (retried), %d refused 5xx; "+
		"%d API reads, %d answered 5xx; connections refused or closed under a request (a balancer retries them): %d SMTP, %d HTTP",
		len(acked), lost, tempFailed.Load(), refused.Load(), apiOK.Load()+api5xx.Load(), api5xx.Load(), smtpTransport.Load(), apiTransport.Load())
	if lost > 0 || api5xx.Load() > 0 || refused.Load() > 0 || len(acked) == 0 {
		t.Fatal("the rolling restart was visible to clients")
	}
}
