//go:build faults

// The fault tests (make test-faults): the real binary, killed and starved of
// its database under load, over loopback. Each reports what it measured
// (acked, stored, lost, duplicated, recovery time) with t.Log.
package e2e

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/smtp"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/internal/cli"
)

// faultService is a data directory and database that children of this
// test serve in turn.
type faultService struct {
	t        *testing.T
	d        sqlstore.Dialect
	env      map[string]string
	inbox    string // the address mail is sent to
	identity string // its identity's uuid, which sends
	key      string // the account's management key
}

func newFaultService(t *testing.T, d sqlstore.Dialect, dbURL string) *faultService {
	env := childEnv(t, t.TempDir())
	env["CALLSIGN_MAIL_DOMAINS"] = "agents.test"
	if dbURL == "" {
		dbURL = sqlstoretest.URL(t, d)
	}
	env["CALLSIGN_DATABASE_URL"] = dbURL
	fs := &faultService{t: t, d: d, env: env}
	var out, errOut bytes.Buffer
	if code := cli.Run([]string{"account", "create", "--email", "faults@example.com"}, strings.NewReader(""), &out, &errOut,
		func(k string) string { return env[k] }); code != 0 {
		t.Fatalf("account create: %d %s", code, errOut.String())
	}
	var b struct {
		ManagementKey string `json:"management_key"`
	}
	if err := json.Unmarshal(out.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	c, _, api := fs.start()
	req, _ := http.NewRequest("POST", "http://"+api+"/api/identities/", strings.NewReader(`{"name": "Sink"}`))
	req.Header.Set("Authorization", "Bearer "+b.ManagementKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ident struct{ Inbox, UUID string }
	json.NewDecoder(res.Body).Decode(&ident)
	res.Body.Close()
	if ident.Inbox == "" {
		t.Fatalf("identity: %d", res.StatusCode)
	}
	fs.inbox, fs.identity, fs.key = ident.Inbox, ident.UUID, b.ManagementKey
	c.cmd.Process.Signal(syscall.SIGTERM)
	c.exitCode(t)
	return fs
}

// start runs a child and returns it with its SMTP and HTTP addresses.
func (fs *faultService) start() (*child, string, string) {
	c := startChild(fs.t, fs.env)
	return c, c.addr(fs.t, "accepting mail over SMTP"), c.addr(fs.t, "serving the REST API")
}

// query reads the service's database directly (beside a running child
// too: SQLite's WAL lets a reader in), calling row for each row.
func (fs *faultService) query(q string, row func(*sql.Rows) error, args ...any) {
	driver, dsn := "sqlite", fs.env["CALLSIGN_DATABASE_URL"]
	if fs.d == sqlstore.Postgres {
		driver = "pgx"
		q = sqlx.Rebind(sqlx.DOLLAR, q)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		fs.t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(q, args...)
	if err != nil {
		fs.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			fs.t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		fs.t.Fatal(err)
	}
}

// storedIDs reads the Message-IDs the database holds, with their counts.
func (fs *faultService) storedIDs() map[string]int {
	ids := map[string]int{}
	fs.query(`SELECT message_id FROM email_messages`, func(rows *sql.Rows) error {
		var id string
		err := rows.Scan(&id)
		ids[strings.Trim(id, "<>")]++
		return err
	})
	return ids
}

// sender sends numbered messages over SMTP until stopped, recording the
// Message-IDs that were answered 250.
type sender struct {
	mu       sync.Mutex
	acked    map[string]bool
	tempFail atomic.Int64 // 4xx answers (451, 421)
	next     atomic.Int64
	lastAck  atomic.Int64 // unix nanos of the latest 250
}

func newSender() *sender { return &sender{acked: map[string]bool{}} }

// run sends from one connection after another until stop closes.
func (s *sender) run(addr, to, tag string, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		c, err := smtp.Dial(addr)
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for i := 0; i < 20; i++ {
			select {
			case <-stop:
				c.Close()
				return
			default:
			}
			id := fmt.Sprintf("%s-%d@faults.test", tag, s.next.Add(1))
			if err := send(c, to, id); err != nil {
				var te *textproto.Error
				if errors.As(err, &te) && te.Code/100 == 4 {
					s.tempFail.Add(1)
				}
				break
			}
			s.mu.Lock()
			s.acked[id] = true
			s.mu.Unlock()
			s.lastAck.Store(time.Now().UnixNano())
		}
		c.Close()
	}
}

func (s *sender) ackedIDs() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.acked))
	for k := range s.acked {
		out[k] = true
	}
	return out
}

// tally compares what was acknowledged with what is stored.
func tally(t *testing.T, what string, acked map[string]bool, stored map[string]int) {
	lost, dup, total := 0, 0, 0
	for id := range acked {
		if stored[id] == 0 {
			lost++
		}
	}
	for _, n := range stored {
		total += n
		if n > 1 {
			dup += n - 1
		}
	}
	t.Logf("%s: acked %d, stored %d (distinct %d), lost %d, duplicated %d", what, len(acked), total, len(stored), lost, dup)
	if lost > 0 {
		t.Errorf("%s: %d acknowledged messages are not stored", what, lost)
	}
}

// kill -9 during SMTP ingest, five times: every message answered 250 is stored.
func TestFaultKillDuringIngest(t *testing.T) {
	forEachDialectInTurn(t, func(t *testing.T, d sqlstore.Dialect) {
		fs := newFaultService(t, d, "")
		s := newSender()
		for cycle := range 5 {
			c, smtpAddr, _ := fs.start()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Add(1)
				go func() { defer wg.Done(); s.run(smtpAddr, fs.inbox, fmt.Sprintf("c%d-w%d", cycle, i), stop) }()
			}
			time.Sleep(1500 * time.Millisecond)
			c.cmd.Process.Kill() // SIGKILL, mid-ingest
			<-c.exited
			close(stop)
			wg.Wait()
		}
		tally(t, "kill -9 ×5 "+string(d), s.ackedIDs(), fs.storedIDs())
	})
}

// proxy forwards TCP to a target until cut: a cut closes every open
// connection and refuses new ones until restored.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns[c] = true
			p.mu.Unlock()
			go p.pipe(c)
		}
	}()
	return p
}

func (p *proxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[up] = true
	p.mu.Unlock()
	go func() { io.Copy(up, c); up.Close(); c.Close() }()
	io.Copy(c, up)
	c.Close()
	up.Close()
}

func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		p.conns = map[net.Conn]bool{}
	}
}

// PostgreSQL unreachable for 10 s under load: senders hear 4xx, the API
// 503, nothing acknowledged is lost, and the service recovers without a
// restart.
func TestFaultPostgresOutage(t *testing.T) {
	if !hasPostgres() {
		t.Fatal("CALLSIGN_TEST_POSTGRES_URL is not set")
	}
	direct := sqlstoretest.URL(t, sqlstore.Postgres)
	u := strings.SplitN(strings.SplitN(direct, "@", 2)[1], "/", 2)
	p := newProxy(t, u[0])
	viaProxy := strings.Replace(direct, u[0], p.ln.Addr().String(), 1)
	fs := newFaultService(t, sqlstore.Postgres, viaProxy)
	c, smtpAddr, api := fs.start()
	s := newSender()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); s.run(smtpAddr, fs.inbox, fmt.Sprintf("pg-w%d", i), stop) }()
	}
	time.Sleep(2 * time.Second)
	p.setCut(true)
	cutAt := time.Now()
	time.Sleep(time.Second)
	// Routes that need the database answer 503 with Retry-After.
	var statuses []string
	for _, path := range []string{"/api/identities/", "/api/email-messages/", "/api/health/whoami/", "/api/contacts/"} {
		req, _ := http.NewRequest("GET", "http://"+api+path, nil)
		req.Header.Set("Authorization", "Bearer "+fs.key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		statuses = append(statuses, fmt.Sprintf("%s %d Retry-After=%q", path, res.StatusCode, res.Header.Get("Retry-After")))
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
			t.Errorf("during the outage %s answered %d (Retry-After %q); want 503 with Retry-After", path, res.StatusCode, res.Header.Get("Retry-After"))
		}
	}
	time.Sleep(9 * time.Second)
	tempDuringCut := s.tempFail.Load()
	p.setCut(false)
	restoredAt := time.Now()
	deadline := time.Now().Add(60 * time.Second)
	for time.Unix(0, s.lastAck.Load()).Before(restoredAt) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	recovery := time.Unix(0, s.lastAck.Load()).Sub(restoredAt)
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	c.cmd.Process.Signal(syscall.SIGTERM)
	c.exitCode(t)
	t.Logf("PostgreSQL cut for %v: %d temporary SMTP failures; API during the cut: %s; first 250 %v after the restore",
		restoredAt.Sub(cutAt).Round(time.Millisecond), tempDuringCut, strings.Join(statuses, ", "), recovery.Round(time.Millisecond))
	if recovery < 0 || recovery > 30*time.Second {
		t.Errorf("no 250 within 30 s of the restore (%v)", recovery)
	}
	if tempDuringCut == 0 {
		t.Error("no sender heard a temporary failure during the cut")
	}
	fs.env["CALLSIGN_DATABASE_URL"] = direct
	tally(t, "PostgreSQL cut 10 s", s.ackedIDs(), fs.storedIDs())
}

func hasPostgres() bool {
	for _, d := range sqlstoretest.Dialects() {
		if d == sqlstore.Postgres {
			return true
		}
	}
	return false
}
