package e2e

import (
	"strings"
	"testing"

	"github.com/callsign/callsign/internal/cli"
)

// callsign config prints each setting's effective value and source, and
// never a secret: secrets are only said to be set, URL passwords masked.
func TestConfigCommand(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{
		"TWILIO_AUTH_TOKEN":            "twilio-token-0123456789",
		"CALLSIGN_VAULT_KEY":           "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
		"CALLSIGN_VAULT_PREVIOUS_KEYS": "HxwdHh8AAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRo=",
		"CALLSIGN_JWT_SECRET":          "jwt-secret-jwt-secret-jwt-secret-0123",
		"CALLSIGN_OIDC_CLIENT_SECRET":  "oidc-client-secret-0123",
	}
	env := map[string]string{
		"CALLSIGN_TELEPHONY":      "twilio",
		"TWILIO_ACCOUNT_SID":      "AC0123",
		"CALLSIGN_OIDC_ISSUER":    "https://accounts.example.com",
		"CALLSIGN_OIDC_CLIENT_ID": "callsign",
		"CALLSIGN_SMTP_RELAY":     "smtp://relayuser:relay-password-0123@relay.example.com:2587",
		"CALLSIGN_DATABASE_URL":   "postgres://dbuser:db-password-0123@db.example.com/callsign",
		"CALLSIGN_BASE_URL":       "https://api.example.com/",
	}
	for k, v := range secrets {
		env[k] = v
	}
	var out, errOut strings.Builder
	if code := cli.Run([]string{"config"}, strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] }); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Fields(line)
		rows[f[0]] = f[1:]
	}
	for name, want := range map[string]string{
		"TWILIO_AUTH_TOKEN":            "(set, redacted) environment",
		"CALLSIGN_VAULT_KEY":           "(set, redacted) environment",
		"CALLSIGN_VAULT_PREVIOUS_KEYS": "(set, redacted) environment",
		"CALLSIGN_JWT_SECRET":          "(set, redacted) environment",
		"CALLSIGN_OIDC_CLIENT_SECRET":  "(set, redacted) environment",
		"CALLSIGN_SMTP_RELAY":          "smtp://relayuser:xxxxx@relay.example.com:2587 environment",
		"CALLSIGN_DATABASE_URL":        "postgres://dbuser:xxxxx@db.example.com/callsign environment",
		"CALLSIGN_BASE_URL":            "https://api.example.com environment",
		"CALLSIGN_HTTP_ADDR":           "127.0.0.1:8080 default",
		"CALLSIGN_SMTP_HOSTNAME":       "api.example.com default", // derived from the base URL
		"CALLSIGN_QUOTA_STORAGE":       "5GiB default",
		"CALLSIGN_OUTBOX_RETRY_MAX":    "1h default",
		"CALLSIGN_DKIM_KEY_FILE":       "(unset) default",
	} {
		if got := strings.Join(rows[name], " "); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	for name, secret := range secrets {
		if strings.Contains(out.String(), secret) {
			t.Errorf("the output shows %s", name)
		}
	}
	for _, password := range []string{"relay-password-0123", "db-password-0123"} {
		if strings.Contains(out.String(), password) {
			t.Errorf("the output shows the password %s", password)
		}
	}

	// A bad value fails as serve would, naming the variable.
	env["CALLSIGN_SMTP_MAX_BYTES"] = "lots"
	out.Reset()
	errOut.Reset()
	if code := cli.Run([]string{"config"}, strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] }); code != 1 || !strings.Contains(errOut.String(), "CALLSIGN_SMTP_MAX_BYTES: ") {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
}
