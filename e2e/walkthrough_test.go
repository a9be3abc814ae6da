package e2e

import (
	"strings"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/internal/cli"
)

// TestWalkthrough follows the README's five-minute walkthrough on each database.
func TestWalkthrough(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		if s := r.call("GET", "/api/health/ping/", "", nil, nil); s != 200 {
			t.Fatalf("ping: %d", s)
		}
		mgmt := r.bootstrap("owner@example.com")
		var ident struct{ UUID, Name, Inbox string }
		if s := r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Support Agent"}, &ident); s != 201 {
			t.Fatalf("create identity: %d", s)
		}
		if ident.Inbox != "support-agent@agents.test" {
			t.Fatalf("identity: %+v", ident)
		}
		var key struct{ Key string }
		if s := r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID, "name": "support bot"}, &key); s != 201 {
			t.Fatalf("create key: %d", s)
		}
		var who struct {
			Account  string
			KeyType  string `json:"key_type"`
			Identity string
		}
		if s := r.call("GET", "/api/health/whoami/", key.Key, nil, &who); s != 200 || who.KeyType != "identity" || who.Identity != ident.UUID || who.Account == "" {
			t.Fatalf("whoami: %d %+v", s, who)
		}
		// The same account's data from the CLI and the API agree.
		if _, errOut, code := r.cli("", "account", "create", "--email", "OWNER@example.com"); code == 0 || !strings.Contains(errOut, "already exists") {
			t.Fatalf("duplicate account: %d %s", code, errOut)
		}
		if out, errOut, code := r.cli("", "migrate"); code != 0 || !strings.Contains(out, "schema version") {
			t.Fatalf("migrate: %d %s %s", code, out, errOut)
		}
	})
}

func TestBadConfigurationStopsStartup(t *testing.T) {
	t.Parallel()
	for name, env := range map[string]map[string]string{
		"CALLSIGN_DATABASE_URL": {"CALLSIGN_DATABASE_URL": "postgres://%zz"},
		"CALLSIGN_HTTP_ADDR":    {"CALLSIGN_HTTP_ADDR": "127.0.0.1:70000"},
		"CALLSIGN_VAULT_KEY":    {"CALLSIGN_VAULT_KEY": "dG9vIHNob3J0"},
	} {
		var out, errOut strings.Builder
		code := cli.Run([]string{"serve"}, strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] })
		lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		if code == 0 || len(lines) != 1 || !strings.Contains(lines[0], name) {
			t.Errorf("%s: exit %d, stderr %q", name, code, errOut.String())
		}
	}
}
