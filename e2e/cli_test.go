package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/ses/sestest"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/internal/cli"
)

// TestMain lets a test run this binary as the callsign command in a child
// process, for what only a real process shows: signals and exit statuses.
func TestMain(m *testing.M) {
	if os.Getenv("CALLSIGN_TEST_RUN_MAIN") == "1" {
		cli.InvokedAs = "callsign"
		os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
	}
	// The AWS SDK's default chain finds the SES fake's static credentials,
	// and never asks for instance metadata (169.254.169.254) off this
	// machine. Set here, before any test runs: parallel tests cannot Setenv.
	os.Setenv("AWS_ACCESS_KEY_ID", sestest.AccessKeyID)
	os.Setenv("AWS_SECRET_ACCESS_KEY", sestest.SecretAccessKey)
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	os.Exit(m.Run())
}

// runCLI runs a command in-process without configuration.
func runCLI(args ...string) (stdout, stderr string, code int) {
	var out, errOut strings.Builder
	code = cli.Run(args, strings.NewReader(""), &out, &errOut, func(string) string { return "" })
	return out.String(), errOut.String(), code
}

func TestHelpAndVersionExitZeroOnStdout(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		out, errOut, code := runCLI(args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "Running the service:") || !strings.Contains(out, "Acting as an identity") || !strings.Contains(out, "account") || !strings.Contains(out, "completion") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		if out, _, code := runCLI(args...); code != 0 || out != "callsign "+cli.Version+"\n" {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
	// Each command's help shows its own flags, and no other command's.
	for _, tc := range []struct {
		args      []string
		has, lack []string
	}{
		{[]string{"account", "create", "--help"}, []string{"--email", "--password-stdin"}, []string{"--server", "--account", "--keep-old"}},
		{[]string{"help", "account", "create"}, []string{"--email"}, []string{"--server"}},
		{[]string{"key", "create", "-h"}, []string{"--account", "--identity", "--name"}, []string{"--email", "--server"}},
		{[]string{"login", "--help"}, []string{"--server", "--name"}, []string{"--email", "--account"}},
		{[]string{"vault", "rotate-key", "--help"}, []string{"--keep-old"}, []string{"--email", "--server"}},
		{[]string{"serve", "--help"}, []string{"Run the service"}, []string{"--email", "--server", "--account"}},
		{[]string{"account", "--help"}, []string{"set-password", "set-subscription", "delete"}, []string{"--email"}},
		{[]string{"mail", "ls", "--help"}, []string{"--unread", "--from", "--limit", "--identity", "--server", "--json"}, []string{"--email", "--account"}},
		{[]string{"secret", "set", "--help"}, []string{"--identity", "--json"}, []string{"--unread"}},
	} {
		out, errOut, code := runCLI(tc.args...)
		if code != 0 || errOut != "" {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
		for _, s := range tc.has {
			if !strings.Contains(out, s) {
				t.Errorf("%v: help lacks %s:\n%s", tc.args, s, out)
			}
		}
		for _, s := range tc.lack {
			if strings.Contains(out, s) {
				t.Errorf("%v: help shows another command's %s:\n%s", tc.args, s, out)
			}
		}
	}
	if out, _, code := runCLI("completion", "bash"); code != 0 || !strings.Contains(out, "callsign") {
		t.Errorf("completion bash: exit %d", code)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"frobnicate"},
		{"serve", "--frobnicate"},
		{"migrate", "extra"},
		{"account", "create"},
		{"account", "frobnicate"},
		{"account", "delete"},
		{"account", "delete", "--account", "not-an-id"},
		{"key", "create"},
		{"key", "create", "--account", "a@example.com", "--identity", "nope"},
		{"login"},
	} {
		out, errOut, code := runCLI(args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "callsign: ") || !strings.Contains(errOut, "--help' for usage.") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	if _, errOut, _ := runCLI("servee"); !strings.Contains(errOut, "serve") {
		t.Errorf("a near miss suggests the command: %q", errOut)
	}
}

// TestKeyCreateRecoversAnAccount mints keys as the operator, for an
// account whose keys were all lost, and uses them on the API.
func TestKeyCreateRecoversAnAccount(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	lost := r.bootstrap("lost@example.com")
	var ident struct{ UUID string }
	if s := r.call("POST", "/api/identities/", lost, map[string]any{"name": "Recovered"}, &ident); s != 201 {
		t.Fatalf("identity: %d", s)
	}
	// The API keeps an account's last management key (409), so "lost" here
	// is a key whose secret nobody has any more.
	var keys []struct{ ID int }
	r.call("GET", "/api/auth/keys/management/", lost, nil, &keys)
	if s := r.call("DELETE", fmt.Sprintf("/api/auth/keys/management/%d/", keys[0].ID), lost, nil, nil); s != 409 {
		t.Fatalf("revoking the last management key: %d; want 409", s)
	}

	out, errOut, code := r.cli("", "key", "create", "--account", "LOST@example.com")
	if code != 0 {
		t.Fatalf("key create: %d %s", code, errOut)
	}
	var mgmt struct {
		ID       int
		Name     string
		Prefix   string
		Key      string
		Identity *string
	}
	if err := json.Unmarshal([]byte(out), &mgmt); err != nil || !strings.HasPrefix(mgmt.Key, "svc_mgmt_") || mgmt.Identity != nil || mgmt.Name != "created by callsign key create" {
		t.Fatalf("printed %q", out)
	}
	var who struct {
		KeyType string `json:"key_type"`
	}
	if s := r.call("GET", "/api/health/whoami/", mgmt.Key, nil, &who); s != 200 || who.KeyType != "management" {
		t.Fatalf("the new key: %d %+v", s, who)
	}

	out, errOut, code = r.cli("", "key", "create", "--account", "lost@example.com", "--identity", ident.UUID, "--name", "agent")
	if code != 0 {
		t.Fatalf("key create --identity: %d %s", code, errOut)
	}
	var idKey struct{ Key, Name, Identity string }
	if err := json.Unmarshal([]byte(out), &idKey); err != nil || !strings.HasPrefix(idKey.Key, "svc_id_") || idKey.Identity != ident.UUID || idKey.Name != "agent" {
		t.Fatalf("printed %q", out)
	}
	var idWho struct{ Identity string }
	if s := r.call("GET", "/api/health/whoami/", idKey.Key, nil, &idWho); s != 200 || idWho.Identity != ident.UUID {
		t.Fatalf("the identity key: %d %+v", s, idWho)
	}

	other := "00000000-0000-4000-8000-000000000000"
	if _, errOut, code := r.cli("", "key", "create", "--account", "lost@example.com", "--identity", other); code != 1 || !strings.Contains(errOut, "Identity not found") {
		t.Fatalf("unknown identity: %d %s", code, errOut)
	}
	if _, errOut, code := r.cli("", "key", "create", "--account", "nobody@example.com"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Fatalf("unknown account: %d %s", code, errOut)
	}
}

func TestStartupErrorsAreOneLineNamingTheVariable(t *testing.T) {
	t.Parallel()
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on: connecting is refused at once.
	closedPort := freeAddr(t)
	for name, env := range map[string]map[string]string{
		"CALLSIGN_DATA_DIR":     {"CALLSIGN_DATA_DIR": filepath.Join(notADir, "data")},
		"CALLSIGN_DATABASE_URL": {"CALLSIGN_DATA_DIR": t.TempDir(), "CALLSIGN_DATABASE_URL": "postgres://callsign:hunter2secret@" + closedPort + "/db?sslmode=disable"},
	} {
		for _, cmd := range [][]string{{"serve"}, {"migrate"}, {"account", "create", "--email", "a@example.com"}} {
			var out, errOut strings.Builder
			code := cli.Run(cmd, strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] })
			lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
			if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "callsign: "+name+": ") {
				t.Errorf("%s, %v: exit %d, stderr %q", name, cmd, code, errOut.String())
			}
			if strings.Contains(errOut.String(), "hunter2secret") {
				t.Errorf("the database password is in the message: %s", errOut.String())
			}
		}
	}
}

// child is callsign serve running as a process of its own.
type child struct {
	cmd    *exec.Cmd
	stdout *lines
	stderr *lines
	exited chan struct{}
}

// lines collects a stream's lines as they come.
type lines struct {
	mu    sync.Mutex
	all   []string
	added chan struct{}
	done  chan struct{} // closed once the stream has ended
}

func collect(t *testing.T, r io.Reader) *lines {
	l := &lines{added: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, sc.Text())
			l.mu.Unlock()
			select {
			case l.added <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// waitFor waits for a line containing s and returns it.
func (l *lines) waitFor(t *testing.T, s string) string {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		l.mu.Lock()
		for _, line := range l.all {
			if strings.Contains(line, s) {
				l.mu.Unlock()
				return line
			}
		}
		l.mu.Unlock()
		select {
		case <-l.added:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no line with %q in:\n%s", s, l)
		}
	}
}

// startChild runs `callsign serve` with env in a child process and waits
// until it serves.
func startChild(t *testing.T, env map[string]string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Env = append(os.Environ(), "CALLSIGN_TEST_RUN_MAIN=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdout: collect(t, stdout), stderr: collect(t, stderr), exited: make(chan struct{})}
	// Wait closes the pipes, so it comes after both are read to their end
	// (os/exec: reads must complete first), or the last lines can be lost.
	go func() { <-c.stdout.done; <-c.stderr.done; _ = cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.exited
	})
	c.stderr.waitFor(t, "accepting mail over SMTP")
	return c
}

// addr is the address a listener announced in its log line.
func (c *child) addr(t *testing.T, announcement string) string {
	line := c.stderr.waitFor(t, announcement)
	for _, field := range strings.Fields(line) {
		if a, ok := strings.CutPrefix(field, "addr="); ok {
			return a
		}
	}
	t.Fatalf("no address in %q", line)
	return ""
}

func (c *child) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-c.exited:
		return c.cmd.ProcessState.ExitCode()
	case <-time.After(2 * time.Minute):
		t.Fatalf("the process did not exit:\n%s", c.stderr)
		return 0
	}
}

func childEnv(t *testing.T, dataDir string) map[string]string {
	return map[string]string{
		"CALLSIGN_DATA_DIR":   dataDir,
		"CALLSIGN_HTTP_ADDR":  "127.0.0.1:0",
		"CALLSIGN_SMTP_ADDR":  "127.0.0.1:0",
		"CALLSIGN_IMAP_ADDR":  "127.0.0.1:0",
		"CALLSIGN_RATE_LIMIT": "off",
	}
}

// TestFirstRunGuidesTheOperator starts a new service twice: the first
// start says which keys it generated and how to create the first account;
// once an account exists and the keys are there, it says neither.
func TestFirstRunGuidesTheOperator(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := childEnv(t, dir)
	first := startChild(t, env)
	first.stdout.waitFor(t, "Generated "+filepath.Join(dir, "vault.key")+": back it up")
	first.stdout.waitFor(t, "Generated "+filepath.Join(dir, "jwt.key")+": back it up")
	first.stdout.waitFor(t, "No account exists yet.")
	hint := first.stdout.waitFor(t, "account create")
	if strings.TrimSpace(hint) != "callsign account create --email you@example.com" {
		t.Fatalf("the hint is not a command to paste: %q", hint)
	}
	if console := first.stderr.waitFor(t, "serving the console"); !strings.Contains(console, "/console/") {
		t.Fatalf("start-up does not say where the console is: %q", console)
	}
	_ = first.cmd.Process.Signal(os.Interrupt)
	if code := first.exitCode(t); code != 0 {
		t.Fatalf("exit %d after Ctrl-C:\n%s", code, first.stderr)
	}
	first.stderr.waitFor(t, "stopped")

	var out, errOut strings.Builder
	getenv := func(k string) string { return env[k] }
	if code := cli.Run([]string{"account", "create", "--email", "first@example.com"}, strings.NewReader(""), &out, &errOut, getenv); code != 0 {
		t.Fatalf("account create: %s", errOut.String())
	}
	second := startChild(t, env)
	_ = second.cmd.Process.Signal(syscall.SIGTERM)
	if code := second.exitCode(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	if s := second.stdout.String(); s != "" {
		t.Fatalf("a second start still guides: %q", s)
	}
}

// stopWhileBusy starts a service with the grace period, opens an SMTP
// session, begins a message and stalls in it (a graceful shutdown waits
// for a message under way; an idle session it ends), then sends sig.
func stopWhileBusy(t *testing.T, grace string, sig os.Signal) *child {
	env := childEnv(t, t.TempDir())
	env["CALLSIGN_SHUTDOWN_GRACE"] = grace
	c := startChild(t, env)
	conn, err := textproto.Dial("tcp", c.addr(t, "accepting mail over SMTP"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, _, err := conn.ReadResponse(220); err != nil {
		t.Fatalf("greeting: %v", err)
	}
	for _, line := range []string{"EHLO client.example.org", "MAIL FROM:<s@example.org>"} {
		if err := conn.PrintfLine("%s", line); err != nil {
			t.Fatal(err)
		}
		if _, _, err := conn.ReadResponse(250); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	_ = c.cmd.Process.Signal(sig)
	return c
}

func TestInterruptSaysWhatItWaitsForAndTwiceExitsAtOnce(t *testing.T) {
	t.Parallel()
	c := stopWhileBusy(t, "10m", os.Interrupt)
	c.stderr.waitFor(t, "press Ctrl-C again to exit at once")
	c.stderr.waitFor(t, "shutting down; waiting for")
	// The progress line every 5 s names what is left: once it is the SMTP
	// session alone, the second Ctrl-C must name just that (sent at the
	// first line, it raced the other parts' own quick stops).
	c.stderr.waitFor(t, "still waiting for SMTP (1 open session)")
	_ = c.cmd.Process.Signal(os.Interrupt)
	if code := c.exitCode(t); code != 130 {
		t.Fatalf("exit %d after a second Ctrl-C:\n%s", code, c.stderr)
	}
	c.stderr.waitFor(t, "exiting at once without waiting for SMTP (1 open session)")
}

func TestDrainThatTimesOutNamesWhatStillRan(t *testing.T) {
	t.Parallel()
	c := stopWhileBusy(t, "1s", syscall.SIGTERM)
	if code := c.exitCode(t); code != 1 {
		t.Fatalf("exit %d after a timed-out drain:\n%s", code, c.stderr)
	}
	c.stderr.waitFor(t, "callsign: shutdown: gave up after 1s; still running: SMTP (1 open session)")
}

// TestKeyCreateOnEachDatabase runs the operator's key command on PostgreSQL too.
func TestKeyCreateOnEachDatabase(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		env := map[string]string{"CALLSIGN_DATA_DIR": t.TempDir(), "CALLSIGN_DATABASE_URL": sqlstoretest.URL(t, d)}
		getenv := func(k string) string { return env[k] }
		var out, errOut strings.Builder
		if code := cli.Run([]string{"account", "create", "--email", "db@example.com"}, strings.NewReader(""), &out, &errOut, getenv); code != 0 {
			t.Fatalf("account create: %s", errOut.String())
		}
		out.Reset()
		if code := cli.Run([]string{"key", "create", "--account", "db@example.com", "--identity", "00000000-0000-4000-8000-000000000000"}, strings.NewReader(""), &out, &errOut, getenv); code != 1 {
			t.Fatalf("an unknown identity: exit %d %s", code, errOut.String())
		}
		if code := cli.Run([]string{"key", "create", "--account", "db@example.com"}, strings.NewReader(""), &out, &errOut, getenv); code != 0 || !strings.Contains(out.String(), "svc_mgmt_") {
			t.Fatalf("key create: %d %s %s", code, out.String(), errOut.String())
		}
	})
}
