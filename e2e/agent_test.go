package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/internal/cli"
)

// agentCLI runs the built program (this test binary as callsign) as a
// person would, with env and stdin, in a home of its own (config under
// home/.config), and returns what it printed and its exit status.
func agentCLI(t *testing.T, home string, env map[string]string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = []string{"CALLSIGN_TEST_RUN_MAIN=1", "PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// TestAgentCLI runs the agent commands against a real service: an identity
// mails, texts and answers another, keeps secrets and reads passwords, as a
// person at a terminal would; --json prints the API's objects; failures
// exit 1 with one line on stderr and nothing on stdout.
func TestAgentCLI(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("ops@example.com")
	ada, bob := r.newAgent(mgmt, "Ada"), r.newAgent(mgmt, "Bob")
	home := t.TempDir()
	as := func(key string) map[string]string {
		return map[string]string{"CALLSIGN_SERVER": r.baseURL, "CALLSIGN_API_KEY": key}
	}
	ok := func(key, stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := agentCLI(t, home, as(key), stdin, args...)
		if code != 0 || errOut != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
		return out
	}
	fails := func(key string, wantCode int, wantErr string, args ...string) {
		t.Helper()
		out, errOut, code := agentCLI(t, home, as(key), "", args...)
		if code != wantCode || out != "" || !strings.Contains(errOut, wantErr) || (wantCode == 1 && strings.Count(errOut, "\n") != 1) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", args, code, out, errOut, wantCode, wantErr)
		}
	}

	if out := ok(ada.key, "", "whoami"); !strings.Contains(out, ada.inbox) || !strings.Contains(out, ada.phone) {
		t.Errorf("whoami:\n%s", out)
	}
	attachment := filepath.Join(t.TempDir(), "agenda.txt")
	os.WriteFile(attachment, []byte("1. numbers\n"), 0o600)
	if out := ok(ada.key, "See the agenda.\n", "mail", "send", "--to", bob.inbox, "--subject", "Monday", "--attach", attachment); !strings.Contains(out, "Sent message") {
		t.Errorf("mail send: %q", out)
	}
	var listed []struct {
		ID      int64
		Subject string
		Preview string
	}
	poll(t, "Bob's copy", func() bool {
		json.Unmarshal([]byte(ok(bob.key, "", "mail", "ls", "--json")), &listed)
		return len(listed) == 1
	})
	if listed[0].Subject != "Monday" || listed[0].Preview != "See the agenda." {
		t.Errorf("mail ls --json: %+v", listed)
	}
	if out := ok(bob.key, "", "mail", "ls", "--unread"); !strings.Contains(out, "SUBJECT") || !strings.Contains(out, "Monday") || !strings.Contains(out, ada.inbox) {
		t.Errorf("mail ls:\n%s", out)
	}
	id := strings.TrimSpace(strings.Fields(strings.Split(ok(bob.key, "", "mail", "ls"), "\n")[1])[0])
	id = strings.TrimPrefix(id, "*")
	if out := ok(bob.key, "", "mail", "read", id); !strings.Contains(out, "See the agenda.") || !strings.Contains(out, "agenda.txt") {
		t.Errorf("mail read:\n%s", out)
	}
	if out := ok(bob.key, "", "mail", "label", id, "Todo", "agenda"); !strings.Contains(out, "agenda todo") {
		t.Errorf("mail label: %q", out)
	}
	if out := ok(bob.key, "", "mail", "label", id, "todo", "--remove"); !strings.Contains(out, "Labels: agenda") || strings.Contains(out, "todo") {
		t.Errorf("mail label --remove: %q", out)
	}
	if out := ok(bob.key, "", "mail", "ls", "--label", "agenda"); !strings.Contains(out, "Monday") {
		t.Errorf("mail ls --label:\n%s", out)
	}
	if out := ok(bob.key, "", "mail", "ls", "--label", "todo"); strings.Contains(out, "Monday") {
		t.Errorf("mail ls --label todo lists an unlabelled message:\n%s", out)
	}
	fails(bob.key, 1, "not a label", "mail", "label", id, "no way")
	if out := ok(bob.key, "", "mail", "reply", id, "--body", "Works for me."); !strings.Contains(out, "Sent message") {
		t.Errorf("mail reply: %q", out)
	}

	// mail wait ends when mail arrives over SMTP.
	waited := make(chan string, 1)
	go func() {
		out, _, _ := agentCLI(t, home, as(ada.key), "", "mail", "wait", "--from", "example.org", "--timeout", "30s")
		waited <- out
	}()
	d := deliverUntilStopped(t, func(n int) error {
		return smtpSend(r.svc.SMTPAddr(), "alice@example.org", []string{ada.inbox}, plainMail(ada.inbox, "wait-"+time.Now().Format("150405.000000")+"@example.org", "Your code is 4821"))
	})
	out := <-waited
	d.stop()
	if !strings.Contains(out, "Your code is 4821") {
		t.Errorf("mail wait: %q", out)
	}
	fails(ada.key, 1, "no message arrived within 1s", "mail", "wait", "--from", "nobody@example.net", "--timeout", "1s")

	// Texts.
	if out := ok(ada.key, "", "sms", "send", "--to", bob.phone, "Meet at noon?"); !strings.Contains(out, "Sent text") {
		t.Errorf("sms send: %q", out)
	}
	var convs []struct {
		ConversationID string `json:"conversation_id"`
	}
	json.Unmarshal([]byte(ok(bob.key, "", "sms", "ls", "--json")), &convs)
	if len(convs) != 1 {
		t.Fatalf("sms ls --json: %+v", convs)
	}
	if out := ok(bob.key, "", "sms", "read", convs[0].ConversationID); !strings.Contains(out, "Meet at noon?") {
		t.Errorf("sms read:\n%s", out)
	}

	// Contacts.
	ok(ada.key, "", "contacts", "add", "--email", "grace@example.org", "--name", "Grace Hopper")
	if out := ok(ada.key, "", "contacts", "ls"); !strings.Contains(out, "Grace Hopper") {
		t.Errorf("contacts ls:\n%s", out)
	}
	if out := ok(ada.key, "", "contacts", "find", "hopper"); !strings.Contains(out, "grace@example.org") {
		t.Errorf("contacts find:\n%s", out)
	}

	// Secrets and passwords: values only when asked for one.
	if out := ok(ada.key, "tok-123\n", "secret", "set", "api-token"); out != "Created secret api-token.\n" {
		t.Errorf("secret set: %q", out)
	}
	if out := ok(ada.key, "", "secret", "set", "api-token", "tok-456"); out != "Updated secret api-token.\n" {
		t.Errorf("secret set again: %q", out)
	}
	if out := ok(ada.key, "", "secret", "get", "api-token"); out != "tok-456\n" {
		t.Errorf("secret get: %q", out)
	}
	if out := ok(ada.key, "", "secret", "ls", "--json"); !strings.Contains(out, "api-token") || strings.Contains(out, "tok-456") {
		t.Errorf("secret ls --json: %s", out)
	}
	r.call("POST", "/api/passwords/", ada.key, map[string]any{"domain": "github.com", "username": "ada", "password": "pa55-word"}, nil)
	if out := ok(ada.key, "", "password", "ls"); !strings.Contains(out, "github.com") || strings.Contains(out, "pa55-word") {
		t.Errorf("password ls:\n%s", out)
	}
	if out := ok(ada.key, "", "password", "get", "github.com"); !strings.Contains(out, "pa55-word") {
		t.Errorf("password get:\n%s", out)
	}
	if out := ok(ada.key, "", "password", "generate", "--length", "24", "--no-special"); len(strings.TrimSpace(out)) != 24 {
		t.Errorf("password generate: %q", out)
	}

	// A management key acts for the identity --identity names.
	var carol struct{ UUID string }
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Carol"}, &carol)
	if out := ok(mgmt, "", "phone", "provision", "--identity", carol.UUID); !strings.Contains(out, "Carol now has the number +") {
		t.Errorf("phone provision: %q", out)
	}
	fails(mgmt, 1, "callsign: Message not found.", "mail", "read", id, "--identity", carol.UUID)

	// Failures: one line on stderr, nothing on stdout.
	fails(ada.key, 1, "callsign: Message not found.", "mail", "read", "999999")
	fails(ada.key, 2, "is not a message id", "mail", "read", "first")
	fails(ada.key, 2, "unknown flag", "mail", "ls", "--colour")
	fails(ada.key, 1, "to_email:", "mail", "send", "--to", "not an address", "--subject", "x", "--body", "x")
	if out, errOut, code := agentCLI(t, t.TempDir(), nil, "", "whoami"); code != 1 || out != "" || !strings.Contains(errOut, "not logged in") {
		t.Errorf("without a login: exit %d, %q, %q", code, out, errOut)
	}

	// Shell completion knows the agent commands.
	if out, _, _ := agentCLI(t, home, nil, "", "__complete", "mail", "r"); !strings.Contains(out, "read") || !strings.Contains(out, "reply") {
		t.Errorf("completion of mail r: %q", out)
	}
}

// TestAgentCLIUsesStoredLogins: the logins `callsign login` stored pick
// the server (the most recent, or --server), the identity key for the
// login's identity and the management key for any other --identity.
func TestAgentCLIUsesStoredLogins(t *testing.T) {
	t.Parallel()
	older, newer := start(t, sqlstore.SQLite, nil), start(t, sqlstore.SQLite, nil)
	home := t.TempDir()
	save := func(r *running, name string, at time.Time) agent {
		mgmt := r.bootstrap(name + "@example.com")
		a := r.newAgent(mgmt, name)
		login := cli.SavedLogin{SavedAt: at}
		login.ManagementKey, login.IdentityKey = mgmt, a.key
		login.Identity.UUID, login.Identity.Name, login.Identity.Inbox = a.uuid, name, a.inbox
		path := filepath.Join(home, ".config", "callsign", "credentials.json")
		var creds cli.Credentials
		if data, err := os.ReadFile(path); err == nil {
			json.Unmarshal(data, &creds)
		}
		if creds.Servers == nil {
			creds.Servers = map[string]cli.SavedLogin{}
		}
		creds.Servers[r.baseURL] = login
		os.MkdirAll(filepath.Dir(path), 0o700)
		data, _ := json.Marshal(creds)
		os.WriteFile(path, data, 0o600)
		return a
	}
	first := save(older, "Olga", time.Now().Add(-time.Hour))
	second := save(newer, "Nina", time.Now())
	if out, errOut, _ := agentCLI(t, home, nil, "", "whoami"); !strings.Contains(out, second.inbox) {
		t.Errorf("the most recent login: %q %q", out, errOut)
	}
	if out, errOut, _ := agentCLI(t, home, nil, "", "whoami", "--server", older.baseURL); !strings.Contains(out, first.inbox) {
		t.Errorf("--server: %q %q", out, errOut)
	}
	var other struct{ UUID, Inbox string }
	newer.call("POST", "/api/identities/", mustManagementKey(t, home, newer.baseURL), map[string]any{"name": "Nora"}, &other)
	if out, errOut, _ := agentCLI(t, home, nil, "", "whoami", "--identity", other.UUID); !strings.Contains(out, other.Inbox) || !strings.Contains(out, "management") {
		t.Errorf("--identity of another identity: %q %q", out, errOut)
	}
	if _, errOut, code := agentCLI(t, home, nil, "", "whoami", "--server", "http://127.0.0.1:1"); code != 1 || !strings.Contains(errOut, "no login for http://127.0.0.1:1") {
		t.Errorf("an unknown --server: %d %q", code, errOut)
	}
}

func mustManagementKey(t *testing.T, home, server string) string {
	data, err := os.ReadFile(filepath.Join(home, ".config", "callsign", "credentials.json"))
	if err != nil {
		t.Fatal(err)
	}
	var creds cli.Credentials
	json.Unmarshal(data, &creds)
	return creds.Servers[server].ManagementKey
}
