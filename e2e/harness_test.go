package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/config"
	"github.com/callsign/callsign/internal/cli"
	"github.com/callsign/callsign/internal/server"
)

// freeAddr is a loopback address for a listener that starts later, whose
// address must be known first (a base URL, a peer's configuration). The
// port lies outside the kernel's ephemeral range, so neither a parallel
// test's listener on port 0 nor an outgoing connection can take it in the
// meantime, and it is never handed out twice in one run.
func freeAddr(t testing.TB) string {
	t.Helper()
	low, high := 1024, 65535
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var first, last int
		if _, err := fmt.Sscan(string(b), &first, &last); err == nil {
			// The wider gap outside [first, last], if there is one.
			switch {
			case first-1024 >= 65535-last && first > 1024:
				high = first - 1
			case last < 65535:
				low = last + 1
			}
		}
	}
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 1000 {
		p := low + rand.IntN(high-low+1)
		if handedOut.ports[p] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ln.Close()
		handedOut.ports[p] = true
		return addr
	}
	t.Fatalf("no free loopback port in %d-%d", low, high)
	return ""
}

// handedOut holds the ports freeAddr has handed out.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// running is the whole service started in-process on loopback ports, on a
// fresh database of one dialect.
type running struct {
	t       testing.TB
	env     map[string]string
	svc     *server.Service
	baseURL string
	client  *http.Client
	// logFile holds what the service logged (at CALLSIGN_LOG_LEVEL, error by default).
	logFile string
	// stop shuts the service down (once; the test's cleanup calls it too).
	stop func()
}

// logs is what the service has logged so far.
func (r *running) logs() string {
	b, err := os.ReadFile(r.logFile)
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

// start runs the service with the dialect's database and env on top of
// test defaults (ephemeral ports, a temporary data directory).
func start(t testing.TB, d sqlstore.Dialect, env map[string]string, tune ...func(*app.Deps)) *running {
	t.Helper()
	return startTuned(t, d, env, nil, tune...)
}

// startTuned is start with the service adjusted by before, when not nil,
// between binding its listeners and serving.
func startTuned(t testing.TB, d sqlstore.Dialect, env map[string]string, before func(*server.Service), tune ...func(*app.Deps)) *running {
	t.Helper()
	e := map[string]string{
		"CALLSIGN_DATA_DIR":     t.TempDir(),
		"CALLSIGN_DATABASE_URL": sqlstoretest.URL(t, d),
		"CALLSIGN_HTTP_ADDR":    "127.0.0.1:0",
		"CALLSIGN_SMTP_ADDR":    "127.0.0.1:0",
		"CALLSIGN_IMAP_ADDR":    "127.0.0.1:0",
		"CALLSIGN_MAIL_DOMAINS": "agents.test",
		"CALLSIGN_LOG_LEVEL":    "error",
		"CALLSIGN_RATE_LIMIT":   "off",
	}
	for k, v := range env {
		e[k] = v
	}
	cfg, err := config.Load(func(k string) string { return e[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs, err := os.Create(filepath.Join(t.TempDir(), "callsign.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	svc, err := server.Open(ctx, cfg, server.NewLogger(logs, cfg.LogLevel), tune...)
	if err != nil {
		t.Fatal(err)
	}
	svc.Version = cli.Version
	if err := svc.Listen(); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(svc)
	}
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
		svc.Close()
	})
	t.Cleanup(stop)
	r := &running{t: t, env: e, svc: svc, baseURL: "http://" + svc.HTTPAddr(), logFile: logs.Name(), stop: stop,
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	return r
}

// cli runs a callsign command against the same configuration.
func (r *running) cli(stdin string, args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	code := cli.Run(args, strings.NewReader(stdin), &out, &errOut, func(k string) string { return r.env[k] })
	return out.String(), errOut.String(), code
}

// bootstrap creates an account through the CLI and returns its management key.
func (r *running) bootstrap(email string) string {
	r.t.Helper()
	out, errOut, code := r.cli("", "account", "create", "--email", email)
	if code != 0 {
		r.t.Fatalf("account create: %d %s", code, errOut)
	}
	var b struct {
		Account       string `json:"account"`
		ManagementKey string `json:"management_key"`
	}
	if err := json.Unmarshal([]byte(out), &b); err != nil || b.ManagementKey == "" {
		r.t.Fatalf("account create printed %q", out)
	}
	return b.ManagementKey
}

// call sends a JSON request and decodes a JSON answer into out (when not nil).
func (r *running) call(method, path, key string, body any, out any) int {
	r.t.Helper()
	status, raw := r.callRaw(method, path, key, body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			r.t.Fatalf("%s %s: %d %s: %v", method, path, status, raw, err)
		}
	}
	return status
}

func (r *running) callRaw(method, path, key string, body any) (int, []byte) {
	r.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.baseURL+path, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := r.client.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw
}

// forEachDialect runs f on SQLite, and on PostgreSQL when it is configured,
// side by side: each run has its own ports, data directory and schema, and
// most of an end-to-end test's time is spent waiting on sockets and timers.
func forEachDialect(t *testing.T, f func(t *testing.T, d sqlstore.Dialect)) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f(t, d)
		})
	}
}

// forEachDialectInTurn runs f on each dialect one after the other, for the
// few tests that set the process's environment (t.Setenv cannot run beside
// parallel tests).
func forEachDialectInTurn(t *testing.T, f func(t *testing.T, d sqlstore.Dialect)) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) { f(t, d) })
	}
}

// latencies collects per-operation durations from concurrent workers.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}
