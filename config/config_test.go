package config

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) Getenv { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{DataDir: "./data", DatabaseURL: "data/callsign.db", HTTPAddr: "127.0.0.1:8080", SMTPAddr: "127.0.0.1:2525",
		IMAPAddr: "127.0.0.1:1143", BaseURL: "http://127.0.0.1:8080", Telephony: "sim", SMTPMaxBytes: 25 << 20,
		RateLimitPerSecond: 20, RateLimitBurst: 40, LogLevel: "info"}
	if c.DataDir != want.DataDir || c.DatabaseURL != want.DatabaseURL || c.HTTPAddr != want.HTTPAddr || c.SMTPAddr != want.SMTPAddr ||
		c.IMAPAddr != want.IMAPAddr || c.BaseURL != want.BaseURL || c.Telephony != want.Telephony || c.SMTPMaxBytes != want.SMTPMaxBytes ||
		c.RateLimitPerSecond != want.RateLimitPerSecond || c.RateLimitBurst != want.RateLimitBurst || c.LogLevel != want.LogLevel ||
		c.ShutdownGrace != 15*time.Second || c.EventRetention != 720*time.Hour ||
		c.OutboxRetry != 30*time.Second || c.OutboxRetryMax != time.Hour || c.OutboxLease != 5*time.Minute || c.SourceLease != 30*time.Second {
		t.Fatalf("defaults: %+v", c)
	}
	if len(c.MailDomains) != 1 || c.MailDomains[0] != "agents.localhost" || c.SMTPRelay != nil || c.VaultKey != nil {
		t.Fatalf("defaults: %+v", c)
	}
	wantQuotas := map[string]int64{"storage": 5 << 30, "identities": 100, "inboxes": 500, "phones": 10, "vault_items": 1000, "sends_per_hour": 200,
		"webhooks_per_identity": 10, "active_calls": 10}
	if !maps.Equal(c.Quotas, wantQuotas) || c.CallMaxDuration != 4*time.Hour {
		t.Fatalf("quotas: %v, want %v", c.Quotas, wantQuotas)
	}
}

// Every quota takes 0 for no limit; storage takes a size.
func TestQuotas(t *testing.T) {
	c, err := Load(env(map[string]string{"CALLSIGN_QUOTA_STORAGE": "2MiB", "CALLSIGN_QUOTA_IDENTITIES": "0", "CALLSIGN_QUOTA_INBOXES": "3",
		"CALLSIGN_QUOTA_PHONES": "0", "CALLSIGN_QUOTA_VAULT_ITEMS": "7", "CALLSIGN_QUOTA_SENDS_PER_HOUR": "0",
		"CALLSIGN_QUOTA_WEBHOOKS_PER_IDENTITY": "4", "CALLSIGN_QUOTA_ACTIVE_CALLS": "2", "CALLSIGN_CALL_MAX_DURATION": "90s"}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"storage": 2 << 20, "identities": 0, "inboxes": 3, "phones": 0, "vault_items": 7, "sends_per_hour": 0,
		"webhooks_per_identity": 4, "active_calls": 2}
	if !maps.Equal(c.Quotas, want) || c.CallMaxDuration != 90*time.Second {
		t.Fatalf("quotas: %v, want %v", c.Quotas, want)
	}
}

func TestValues(t *testing.T) {
	c, err := Load(env(map[string]string{
		"CALLSIGN_DATA_DIR":       "/var/lib/callsign",
		"CALLSIGN_DATABASE_URL":   "postgres://u:p@db:5432/callsign",
		"CALLSIGN_HTTP_ADDR":      "0.0.0.0:80",
		"CALLSIGN_BASE_URL":       "https://api.example.com/",
		"CALLSIGN_MAIL_DOMAINS":   "Agents.Example.com, bots.example.com.",
		"CALLSIGN_SMTP_RELAY":     "smtp://user:secret@relay.example.com:2587",
		"CALLSIGN_TELEPHONY":      "twilio",
		"TWILIO_ACCOUNT_SID":      "AC123",
		"TWILIO_AUTH_TOKEN":       "tok",
		"CALLSIGN_VAULT_KEY":      "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
		"CALLSIGN_RATE_LIMIT":     "5:10",
		"CALLSIGN_SMTP_MAX_BYTES": "1048576",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseURL != "postgres://u:p@db:5432/callsign" || c.BaseURL != "https://api.example.com" ||
		strings.Join(c.MailDomains, ",") != "agents.example.com,bots.example.com" || c.Telephony != "twilio" ||
		len(c.VaultKey) != 32 || c.VaultKey[31] != 31 || c.RateLimitPerSecond != 5 || c.RateLimitBurst != 10 || c.SMTPMaxBytes != 1<<20 {
		t.Fatalf("parsed: %+v", c)
	}
	r := c.SMTPRelay
	if r == nil || r.ImplicitTLS || r.Addr() != "relay.example.com:2587" || r.Username != "user" || r.Password != "secret" {
		t.Fatalf("relay: %+v", r)
	}
}

func TestBadValuesNameTheVariable(t *testing.T) {
	withACME := map[string]string{"CALLSIGN_ACME": "on", "CALLSIGN_ACME_EMAIL": "ops@example.com", "CALLSIGN_HTTPS_ADDR": "0.0.0.0:443"}
	for _, tc := range []struct {
		name, value string
		alsoSet     map[string]string
	}{
		{"CALLSIGN_DATABASE_URL", "postgres://%zz", nil},
		{"CALLSIGN_DATABASE_URL", "mysql://db/x", nil},
		{"CALLSIGN_DATABASE_URL", "postgres://db:70000/x", nil},
		{"CALLSIGN_HTTP_ADDR", "127.0.0.1:99999", nil},
		{"CALLSIGN_HTTP_ADDR", "localhost", nil},
		{"CALLSIGN_SMTP_ADDR", "127.0.0.1:-1", nil},
		{"CALLSIGN_BASE_URL", "ftp://x", nil},
		{"CALLSIGN_MAIL_DOMAINS", "not a domain", nil},
		{"CALLSIGN_VAULT_KEY", "c2hvcnQ=", nil},
		{"CALLSIGN_VAULT_KEY", "!!!", nil},
		{"CALLSIGN_SMTP_RELAY", "http://relay", nil},
		{"CALLSIGN_TELEPHONY", "pigeon", nil},
		{"CALLSIGN_MAIL_PROVIDER", "postfix", nil},
		{"CALLSIGN_SES_REGION", "", map[string]string{"CALLSIGN_MAIL_PROVIDER": "ses"}},
		{"CALLSIGN_SES_REGION", "eu west", map[string]string{"CALLSIGN_MAIL_PROVIDER": "ses"}},
		{"CALLSIGN_SES_ENDPOINT", "localhost:4566", nil},
		{"CALLSIGN_MAILGUN_API_KEY", "", map[string]string{"CALLSIGN_MAIL_PROVIDER": "mailgun"}},
		{"CALLSIGN_MAILGUN_API_BASE", "api.mailgun.net/v3", nil},
		{"TWILIO_ACCOUNT_SID", "", map[string]string{"CALLSIGN_TELEPHONY": "twilio"}},
		{"TELNYX_CONNECTION_ID", "", map[string]string{"CALLSIGN_TELEPHONY": "telnyx", "TELNYX_API_KEY": "k", "TELNYX_PUBLIC_KEY": "p",
			"TELNYX_MESSAGING_PROFILE_ID": "m"}},
		{"CALLSIGN_TELNYX_API_BASE", "api.telnyx.com", nil},
		{"CALLSIGN_RATE_LIMIT", "fast", nil},
		{"CALLSIGN_SMTP_MAX_BYTES", "lots", nil},
		{"CALLSIGN_IMAPS_ADDR", "127.0.0.1:993", nil}, // implicit TLS without a certificate
		{"CALLSIGN_IMAPS_ADDR", "993", map[string]string{"CALLSIGN_SMTP_TLS_CERT": "c.pem", "CALLSIGN_SMTP_TLS_KEY": "k.pem"}},
		{"CALLSIGN_JWT_SECRET", "short", nil},
		{"CALLSIGN_ACME", "sometimes", nil},
		{"CALLSIGN_ACME_EMAIL", "", map[string]string{"CALLSIGN_ACME": "on", "CALLSIGN_HTTPS_ADDR": "0.0.0.0:443", "CALLSIGN_BASE_URL": "https://callsign.example.com"}},
		{"CALLSIGN_ACME_EMAIL", "ops at example", nil},
		{"CALLSIGN_ACME_DIRECTORY", "acme.example/dir", nil},
		{"CALLSIGN_HTTPS_ADDR", "", map[string]string{"CALLSIGN_ACME": "on", "CALLSIGN_ACME_EMAIL": "ops@example.com", "CALLSIGN_BASE_URL": "https://callsign.example.com"}},
		{"CALLSIGN_HTTPS_ADDR", "0.0.0.0:443", nil}, // HTTPS without ACME
		{"CALLSIGN_BASE_URL", "http://callsign.example.com", withACME},
		{"CALLSIGN_BASE_URL", "https://127.0.0.1", withACME},
		{"CALLSIGN_BASE_URL", "https://localhost", withACME},
		{"CALLSIGN_MX_HOST", "mx", map[string]string{"CALLSIGN_ACME": "on", "CALLSIGN_ACME_EMAIL": "ops@example.com", "CALLSIGN_HTTPS_ADDR": "0.0.0.0:443",
			"CALLSIGN_BASE_URL": "https://callsign.example.com"}},
		{"CALLSIGN_ACME", "on", map[string]string{"CALLSIGN_ACME_EMAIL": "ops@example.com", "CALLSIGN_HTTPS_ADDR": "0.0.0.0:443",
			"CALLSIGN_BASE_URL": "https://callsign.example.com", "CALLSIGN_SMTP_TLS_CERT": "c.pem", "CALLSIGN_SMTP_TLS_KEY": "k.pem"}},
		{"CALLSIGN_TRUSTED_PROXIES", "10.0.0.0/33", nil},
		{"CALLSIGN_SHUTDOWN_GRACE", "soon", nil},
		{"CALLSIGN_MX_HOST", "192.0.2.25", nil},
		{"CALLSIGN_MX_HOST", "not a host", nil},
		{"CALLSIGN_SPF_INCLUDE", "spf relay", nil},
		{"CALLSIGN_DNS_RESOLVER", "dns.example.com:53", nil},
		{"CALLSIGN_DNS_RESOLVER", "127.0.0.1:0", nil},
		{"CALLSIGN_DKIM_KEY_FILE", "", map[string]string{"CALLSIGN_DKIM_SELECTOR": "s1"}},
		{"CALLSIGN_DKIM_KEY_FILE", "dkim.pem", nil},
		{"CALLSIGN_DKIM_SELECTOR", "bad selector", map[string]string{"CALLSIGN_DKIM_KEY_FILE": "dkim.pem"}},
		{"CALLSIGN_DKIM_KEY_FILE", "rsa.pem,ed.pem", map[string]string{"CALLSIGN_DKIM_SELECTOR": "s1"}},
		{"CALLSIGN_DKIM_KEY_FILE", "a.pem,b.pem,c.pem", map[string]string{"CALLSIGN_DKIM_SELECTOR": "s1,s2,s3"}},
		{"CALLSIGN_DKIM_SELECTOR", "s1,S1", map[string]string{"CALLSIGN_DKIM_KEY_FILE": "rsa.pem,ed.pem"}},
		{"CALLSIGN_DKIM_SELECTOR", "s1,bad selector", map[string]string{"CALLSIGN_DKIM_KEY_FILE": "rsa.pem,ed.pem"}},
		{"CALLSIGN_INBOUND_AUTH", "sometimes", nil},
		{"CALLSIGN_METRICS_ADDR", "9090", nil},
		{"CALLSIGN_MCP", "yes", nil},
		{"CALLSIGN_SOURCES_ALLOW_PRIVATE", "sure", nil},
		{"CALLSIGN_SMTP_MAX_SESSIONS", "0", nil},
		{"CALLSIGN_SMTP_MAX_SESSIONS_PER_IP", "many", nil},
		{"CALLSIGN_MAX_STREAMS_PER_KEY", "0", nil},
		{"CALLSIGN_MAX_STREAMS_PER_ACCOUNT", "lots", nil},
		{"CALLSIGN_SMTP_DATA_TIMEOUT", "10", nil},
		{"CALLSIGN_SMTP_MAX_INFLIGHT_BYTES", "plenty", nil},
		{"CALLSIGN_SMTP_MAX_INFLIGHT_BYTES", "10MiB", nil}, // below the 25 MiB size limit
		{"CALLSIGN_SHUTDOWN_GRACE", "-1s", nil},
		{"CALLSIGN_EVENT_RETENTION", "500ms", nil},
		{"CALLSIGN_EVENT_RETENTION", "a month", nil},
		{"CALLSIGN_OUTBOX_RETRY", "10ms", nil},
		{"CALLSIGN_OUTBOX_RETRY_MAX", "10s", map[string]string{"CALLSIGN_OUTBOX_RETRY": "1m"}},
		{"CALLSIGN_OUTBOX_LEASE", "1s", nil},
		{"CALLSIGN_SOURCE_LEASE", "500ms", nil},
		{"CALLSIGN_QUOTA_STORAGE", "a lot", nil},
		{"CALLSIGN_QUOTA_STORAGE", "-1", nil},
		{"CALLSIGN_QUOTA_IDENTITIES", "-1", nil},
		{"CALLSIGN_QUOTA_INBOXES", "10k", nil},
		{"CALLSIGN_QUOTA_PHONES", "unlimited", nil},
		{"CALLSIGN_QUOTA_VAULT_ITEMS", "1.5", nil},
		{"CALLSIGN_QUOTA_SENDS_PER_HOUR", "100/h", nil},
		{"CALLSIGN_QUOTA_WEBHOOKS_PER_IDENTITY", "-2", nil},
	} {
		m := map[string]string{tc.name: tc.value}
		for k, v := range tc.alsoSet {
			m[k] = v
		}
		_, err := Load(env(m))
		if err == nil || !strings.HasPrefix(err.Error(), tc.name+": ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s=%q: error %v should be one line naming the variable", tc.name, tc.value, err)
		}
	}
}

// With ACME on, its settings load, and HTTPS takes the place of a
// certificate file for IMAPS.
func TestACMESettings(t *testing.T) {
	c, err := Load(env(map[string]string{"CALLSIGN_ACME": "ON", "CALLSIGN_ACME_EMAIL": "ops@example.com", "CALLSIGN_HTTPS_ADDR": "0.0.0.0:443",
		"CALLSIGN_BASE_URL": "https://callsign.example.com", "CALLSIGN_IMAPS_ADDR": "0.0.0.0:993"}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.ACME || c.ACMEDirectory != LetsEncryptDirectory || c.MXHost != "callsign.example.com" || c.HTTPSAddr != "0.0.0.0:443" {
		t.Fatalf("parsed: %+v", c)
	}
}

// The SMTP name is a domain name or an address literal: a bare IP is no
// valid EHLO argument (RFC 5321 §4.1.3).
func TestSMTPHostname(t *testing.T) {
	for _, tc := range []struct{ base, configured, want string }{
		{"", "", "[127.0.0.1]"},
		{"http://[::1]:8080", "", "[IPv6:::1]"},
		{"https://API.example.com", "", "api.example.com"},
		{"", "MX.Example.com.", "mx.example.com"},
		{"", "[192.0.2.1]", "[192.0.2.1]"},
	} {
		c, err := Load(env(map[string]string{"CALLSIGN_BASE_URL": tc.base, "CALLSIGN_SMTP_HOSTNAME": tc.configured}))
		if err != nil || c.SMTPHostname != tc.want {
			t.Errorf("base %q, configured %q: %q, %v; want %q", tc.base, tc.configured, c.SMTPHostname, err, tc.want)
		}
	}
	if c, err := Load(env(map[string]string{"CALLSIGN_POSTMASTER": "Ops@Agents.Example.com"})); err != nil || c.Postmaster != "ops@agents.example.com" {
		t.Errorf("CALLSIGN_POSTMASTER: %q, %v", c.Postmaster, err)
	}
	if _, err := Load(env(map[string]string{"CALLSIGN_POSTMASTER": "Ops <ops@example.com>"})); err == nil {
		t.Error("CALLSIGN_POSTMASTER took a name")
	}
	for _, bad := range []string{"not a name", "[300.1.1.1]", "under_score.example"} {
		if _, err := Load(env(map[string]string{"CALLSIGN_SMTP_HOSTNAME": bad})); err == nil || !strings.Contains(err.Error(), "CALLSIGN_SMTP_HOSTNAME") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// The MX host is a host name, never an address: configured, else our SMTP
// name, else none (custom domains are then told what to set).
func TestMXHost(t *testing.T) {
	for _, tc := range []struct{ base, smtpName, configured, want string }{
		{"", "", "", ""}, // the default base URL, http://127.0.0.1:8080
		{"http://[::1]:8080", "", "", ""},
		{"", "[192.0.2.1]", "", ""},
		{"https://API.example.com", "", "", "api.example.com"},
		{"", "Mail.Example.com", "", "mail.example.com"},
		{"https://api.example.com", "mail.example.com", "MX.Example.com.", "mx.example.com"},
	} {
		c, err := Load(env(map[string]string{"CALLSIGN_BASE_URL": tc.base, "CALLSIGN_SMTP_HOSTNAME": tc.smtpName, "CALLSIGN_MX_HOST": tc.configured}))
		if err != nil || c.MXHost != tc.want {
			t.Errorf("base %q, SMTP name %q, configured %q: %q, %v; want %q", tc.base, tc.smtpName, tc.configured, c.MXHost, err, tc.want)
		}
	}
}

func TestMailAuthenticationSettings(t *testing.T) {
	c, err := Load(env(map[string]string{"CALLSIGN_BASE_URL": "https://API.example.com:8443"}))
	if err != nil || c.MXHost != "api.example.com" || c.InboundAuth != "on" || c.DNSResolver != "" || c.SPFInclude != "" || c.PlatformDKIM != nil {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	c, err = Load(env(map[string]string{
		"CALLSIGN_MX_HOST":        "MX.Callsign.Example.",
		"CALLSIGN_SPF_INCLUDE":    "_spf.Relay.Example",
		"CALLSIGN_DNS_RESOLVER":   "127.0.0.1",
		"CALLSIGN_DKIM_KEY_FILE":  "/etc/callsign/dkim.pem",
		"CALLSIGN_DKIM_SELECTOR":  "Mail2026",
		"CALLSIGN_INBOUND_AUTH":   "ALL",
		"CALLSIGN_TLS_REPORTS_TO": "TLS-Reports@Example.com",
	}))
	if err != nil || c.TLSReportsTo != "tls-reports@example.com" || c.MXHost != "mx.callsign.example" || c.SPFInclude != "_spf.relay.example" || c.DNSResolver != "127.0.0.1:53" ||
		!slices.Equal(c.PlatformDKIM, []DKIMKeyFile{{Path: "/etc/callsign/dkim.pem", Selector: "mail2026"}}) || c.InboundAuth != "all" {
		t.Fatalf("values: %+v, %v", c, err)
	}
	// Two keys, each under its own selector, paired in order.
	c, err = Load(env(map[string]string{
		"CALLSIGN_DKIM_KEY_FILE": "/etc/callsign/rsa.pem, /etc/callsign/ed25519.pem",
		"CALLSIGN_DKIM_SELECTOR": "Mail2026r,mail2026e",
	}))
	if want := []DKIMKeyFile{{"/etc/callsign/rsa.pem", "mail2026r"}, {"/etc/callsign/ed25519.pem", "mail2026e"}}; err != nil || !slices.Equal(c.PlatformDKIM, want) {
		t.Fatalf("two keys: %+v, %v", c.PlatformDKIM, err)
	}
	if c, err := Load(env(nil)); err != nil || !c.MCP {
		t.Errorf("CALLSIGN_MCP is on by default: %v, %v", c.MCP, err)
	}
	if c, err := Load(env(map[string]string{"CALLSIGN_MCP": "OFF"})); err != nil || c.MCP {
		t.Errorf("CALLSIGN_MCP=OFF: %v, %v", c.MCP, err)
	}
	if c, err := Load(env(nil)); err != nil || c.SMTPMaxInflightBytes != 256<<20 {
		t.Errorf("the SMTP in-flight budget by default: %d, %v", c.SMTPMaxInflightBytes, err)
	}
	if c, err := Load(env(nil)); err != nil || c.SMTPMaxSessions != 1000 || c.SMTPMaxSessionsPerIP != 50 || c.SMTPDataTimeout != 10*time.Minute || c.MaxStreamsPerKey != 10 || c.MaxStreamsPerAccount != 100 {
		t.Errorf("session and stream limits by default: %d %d %v %d %d, %v", c.SMTPMaxSessions, c.SMTPMaxSessionsPerIP, c.SMTPDataTimeout, c.MaxStreamsPerKey, c.MaxStreamsPerAccount, err)
	}
	if c, err := Load(env(nil)); err != nil || c.SourcesAllowPrivate {
		t.Errorf("CALLSIGN_SOURCES_ALLOW_PRIVATE is off by default: %v, %v", c.SourcesAllowPrivate, err)
	}
	if c, err := Load(env(map[string]string{"CALLSIGN_SOURCES_ALLOW_PRIVATE": "true"})); err != nil || !c.SourcesAllowPrivate {
		t.Errorf("CALLSIGN_SOURCES_ALLOW_PRIVATE=true: %v, %v", c.SourcesAllowPrivate, err)
	}
	if c, err := Load(env(map[string]string{"CALLSIGN_DNS_RESOLVER": "[::1]:5353"})); err != nil || c.DNSResolver != "[::1]:5353" {
		t.Errorf("IPv6 resolver: %q, %v", c.DNSResolver, err)
	}
}
