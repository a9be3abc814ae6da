// Package config reads Callsign's configuration from the environment into
// one typed struct. Every variable has a default that runs on a laptop with
// nothing installed; a bad value fails with an error naming the variable.
package config

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is the whole configuration.
type Config struct {
	DataDir     string
	DatabaseURL string // a postgres:// URL, or the SQLite file path
	HTTPAddr    string
	SMTPAddr    string
	IMAPAddr    string
	IMAPSAddr   string // implicit-TLS IMAP; "" for none
	BaseURL     string // no trailing slash
	MailDomains []string

	SMTPMaxBytes int64
	// SMTPHostname is our name in the SMTP greeting, in EHLO to the relay
	// and in Received: a domain name, or an address literal ("[192.0.2.1]").
	SMTPHostname string
	// Postmaster is the inbox that receives postmaster@ the platform
	// domains; "" means the service's oldest inbox.
	Postmaster  string
	SMTPTLSCert string
	SMTPTLSKey  string
	SMTPRelay   *Relay // nil: no external delivery
	SMTPRelayCA string // PEM file of CAs to trust for the relay; "" means the system's

	Telephony         string // "sim" or "twilio"
	TwilioAccountSID  string
	TwilioAuthToken   string
	VaultKey          []byte   // nil: the key file in the data dir
	VaultPreviousKeys [][]byte // keys still accepted for opening, during a rotation

	JWTSecret          []byte // nil: generated into the data dir
	OIDCIssuer         string
	OIDCClientID       string
	OIDCClientSecret   string
	RateLimitPerSecond float64 // 0: no limit
	RateLimitBurst     int
	// TrustedProxies are proxies (IPs or CIDRs) whose X-Forwarded-For names
	// the client, for per-address limits; none: the peer is the client.
	TrustedProxies []string

	LogLevel string
	// ShutdownGrace is how long a stopping service waits for work in flight.
	ShutdownGrace time.Duration
	// OutboxRetry is the pause after a delivery attempt's temporary
	// failure, doubling per attempt up to OutboxRetryMax
	// (CALLSIGN_OUTBOX_RETRY, CALLSIGN_OUTBOX_RETRY_MAX).
	OutboxRetry, OutboxRetryMax time.Duration
	// OutboxLease is how long a claimed message is its worker's: one whose
	// worker died is attempted again after it (CALLSIGN_OUTBOX_LEASE).
	OutboxLease time.Duration
	// EventRetention is how long events are kept (CALLSIGN_EVENT_RETENTION).
	EventRetention time.Duration
	// DebugAddr, when set, serves Go's profiler (net/http/pprof) there.
	DebugAddr string
	// MetricsAddr, when set, serves Prometheus metrics there.
	MetricsAddr string
	// MCP serves the Model Context Protocol at /mcp (CALLSIGN_MCP=on|off).
	MCP bool

	// MXHost is where custom domains' MX records must point; "" when we know
	// no host name of our own.
	MXHost string
	// SPFInclude, when set, is the domain custom domains' SPF records include.
	SPFInclude string
	// DNSResolver is the name server to ask (IP:port); "" means the system's.
	DNSResolver string
	// PlatformDKIM are the keys that sign platform domains' mail, each
	// under its own selector (CALLSIGN_DKIM_KEY_FILE, CALLSIGN_DKIM_SELECTOR:
	// comma-separated lists, paired in order); none when unset.
	PlatformDKIM []DKIMKeyFile
	// InboundAuth says which inbound connections get SPF, DKIM and DMARC
	// checks: "on" (all but loopback), "all" or "off".
	InboundAuth string

	// SourcesAllowPrivate lets IMAP sources connect to loopback, private,
	// link-local and metadata addresses (CALLSIGN_SOURCES_ALLOW_PRIVATE):
	// for tests and local development only.
	SourcesAllowPrivate bool
	// SourceLease is how long an instance holds the IMAP sources it pulls
	// (CALLSIGN_SOURCE_LEASE): renewed every third of it, taken over by
	// another instance when it has run out.
	SourceLease time.Duration
	// WebhookAllowPrivate is the same for webhook endpoints
	// (CALLSIGN_WEBHOOK_ALLOW_PRIVATE).
	WebhookAllowPrivate bool

	// SMTPMaxSessions and SMTPMaxSessionsPerIP cap concurrent inbound SMTP
	// sessions, overall and per client address; SMTPDataTimeout bounds a
	// DATA transfer, and three of it a whole session.
	SMTPMaxSessions      int
	SMTPMaxSessionsPerIP int
	SMTPDataTimeout      time.Duration
	// SMTPMaxInflightBytes caps the bytes of DATA all inbound SMTP
	// sessions hold at once (CALLSIGN_SMTP_MAX_INFLIGHT_BYTES); past it a
	// message is answered 451 4.3.1 and its sender retries.
	SMTPMaxInflightBytes int64

	// MaxStreamsPerKey and MaxStreamsPerAccount cap the event streams and
	// long polls open at once on one instance (CALLSIGN_MAX_STREAMS_PER_*).
	MaxStreamsPerKey, MaxStreamsPerAccount int

	// Quotas are the limits per account (CALLSIGN_QUOTA_*), by the names
	// whoami shows (storage in bytes; vault_items per identity); 0 is
	// unlimited.
	Quotas map[string]int64
}

// QuotaDefaults are the quotas of an unset CALLSIGN_QUOTA_*: room for a
// busy agent fleet on a shared deployment, with phone numbers (which cost
// money) and sending (which costs the relay's reputation) held closer.
var QuotaDefaults = []struct{ Name, Default string }{
	{"storage", "5GiB"},
	{"identities", "100"},
	{"inboxes", "500"},
	{"phones", "10"},
	{"vault_items", "1000"},
	{"sends_per_hour", "200"},
	{"webhooks_per_identity", "10"},
}

// Relay is the outbound SMTP relay of CALLSIGN_SMTP_RELAY.
type Relay struct {
	ImplicitTLS bool // smtps://
	Host        string
	Port        string
	Username    string
	Password    string
}

// Addr is the relay's host:port.
func (r Relay) Addr() string { return net.JoinHostPort(r.Host, r.Port) }

// Getenv looks up a variable; os.Getenv fits.
type Getenv func(string) string

// Load reads the configuration. The error names the variable at fault.
func Load(getenv Getenv) (Config, error) {
	var c Config
	var err error
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	fail := func(name string, format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...))
	}

	c.DataDir = get("CALLSIGN_DATA_DIR", "./data")
	c.DatabaseURL = get("CALLSIGN_DATABASE_URL", filepath.Join(c.DataDir, "callsign.db"))
	if msg := checkDatabaseURL(c.DatabaseURL); msg != "" {
		return fail("CALLSIGN_DATABASE_URL", "%s", msg)
	}
	for _, a := range []struct {
		name string
		dst  *string
		def  string
	}{
		{"CALLSIGN_HTTP_ADDR", &c.HTTPAddr, "127.0.0.1:8080"},
		{"CALLSIGN_SMTP_ADDR", &c.SMTPAddr, "127.0.0.1:2525"},
		{"CALLSIGN_IMAP_ADDR", &c.IMAPAddr, "127.0.0.1:1143"},
	} {
		*a.dst = get(a.name, a.def)
		if msg := checkListenAddr(*a.dst); msg != "" {
			return fail(a.name, "%s", msg)
		}
	}

	c.BaseURL = strings.TrimSuffix(get("CALLSIGN_BASE_URL", "http://"+c.HTTPAddr), "/")
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return fail("CALLSIGN_BASE_URL", "%q is not an absolute http(s) URL", c.BaseURL)
	}

	for _, d := range strings.Split(get("CALLSIGN_MAIL_DOMAINS", "agents.localhost"), ",") {
		d = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
		if d == "" {
			continue
		}
		if !isDomainName(d) {
			return fail("CALLSIGN_MAIL_DOMAINS", "%q is not a domain name", d)
		}
		c.MailDomains = append(c.MailDomains, d)
	}
	if len(c.MailDomains) == 0 {
		return fail("CALLSIGN_MAIL_DOMAINS", "at least one domain is needed")
	}

	if c.SMTPMaxBytes, err = parseSize(get("CALLSIGN_SMTP_MAX_BYTES", "25MiB")); err != nil || c.SMTPMaxBytes < 1024 {
		return fail("CALLSIGN_SMTP_MAX_BYTES", "want a size of at least 1KiB such as 26214400 or 25MiB")
	}
	for _, n := range []struct {
		name string
		v    *int
		def  string
	}{{"CALLSIGN_SMTP_MAX_SESSIONS", &c.SMTPMaxSessions, "1000"}, {"CALLSIGN_SMTP_MAX_SESSIONS_PER_IP", &c.SMTPMaxSessionsPerIP, "50"},
		{"CALLSIGN_MAX_STREAMS_PER_KEY", &c.MaxStreamsPerKey, "10"}, {"CALLSIGN_MAX_STREAMS_PER_ACCOUNT", &c.MaxStreamsPerAccount, "100"}} {
		if *n.v, err = strconv.Atoi(get(n.name, n.def)); err != nil || *n.v < 1 {
			return fail(n.name, "want a whole number of at least 1")
		}
	}
	if c.SMTPDataTimeout, err = time.ParseDuration(get("CALLSIGN_SMTP_DATA_TIMEOUT", "10m")); err != nil || c.SMTPDataTimeout <= 0 {
		return fail("CALLSIGN_SMTP_DATA_TIMEOUT", "want a positive duration such as 10m")
	}
	// A message of the largest size must fit, or its sender would retry forever.
	if c.SMTPMaxInflightBytes, err = parseSize(get("CALLSIGN_SMTP_MAX_INFLIGHT_BYTES", "256MiB")); err != nil || c.SMTPMaxInflightBytes < c.SMTPMaxBytes {
		return fail("CALLSIGN_SMTP_MAX_INFLIGHT_BYTES", "want a size such as 256MiB, at least CALLSIGN_SMTP_MAX_BYTES")
	}
	c.Quotas = map[string]int64{}
	for _, q := range QuotaDefaults {
		name := "CALLSIGN_QUOTA_" + strings.ToUpper(q.Name)
		if q.Name == "storage" {
			if c.Quotas[q.Name], err = parseSize(get(name, q.Default)); err != nil {
				return fail(name, "want a size such as 5GiB or 5368709120, or 0 for no limit")
			}
			continue
		}
		if c.Quotas[q.Name], err = strconv.ParseInt(get(name, q.Default), 10, 64); err != nil || c.Quotas[q.Name] < 0 {
			return fail(name, "want a whole number, or 0 for no limit")
		}
	}
	if c.SMTPHostname, err = smtpHostname(get("CALLSIGN_SMTP_HOSTNAME", ""), c.BaseURL); err != nil {
		return fail("CALLSIGN_SMTP_HOSTNAME", "%v", err)
	}
	if c.Postmaster = strings.ToLower(get("CALLSIGN_POSTMASTER", "")); c.Postmaster != "" {
		if _, err := mail.ParseAddress(c.Postmaster); err != nil || strings.ContainsAny(c.Postmaster, "<> ") {
			return fail("CALLSIGN_POSTMASTER", "%q is not an email address", c.Postmaster)
		}
	}
	c.SMTPTLSCert, c.SMTPTLSKey = get("CALLSIGN_SMTP_TLS_CERT", ""), get("CALLSIGN_SMTP_TLS_KEY", "")
	if (c.SMTPTLSCert == "") != (c.SMTPTLSKey == "") {
		return fail("CALLSIGN_SMTP_TLS_CERT", "set both CALLSIGN_SMTP_TLS_CERT and CALLSIGN_SMTP_TLS_KEY, or neither")
	}
	if raw := get("CALLSIGN_SMTP_RELAY", ""); raw != "" {
		if c.SMTPRelay, err = parseRelay(raw); err != nil {
			return fail("CALLSIGN_SMTP_RELAY", "%v", err)
		}
	}
	c.SMTPRelayCA = get("CALLSIGN_SMTP_RELAY_CA", "")
	if c.IMAPSAddr = get("CALLSIGN_IMAPS_ADDR", ""); c.IMAPSAddr != "" {
		if msg := checkListenAddr(c.IMAPSAddr); msg != "" {
			return fail("CALLSIGN_IMAPS_ADDR", "%s", msg)
		}
		if c.SMTPTLSCert == "" {
			return fail("CALLSIGN_IMAPS_ADDR", "implicit TLS needs a certificate: set CALLSIGN_SMTP_TLS_CERT and CALLSIGN_SMTP_TLS_KEY")
		}
	}

	if c.MXHost, err = mxHost(get("CALLSIGN_MX_HOST", ""), c.SMTPHostname); err != nil {
		return fail("CALLSIGN_MX_HOST", "%v", err)
	}
	if c.SPFInclude = strings.TrimSuffix(strings.ToLower(get("CALLSIGN_SPF_INCLUDE", "")), "."); c.SPFInclude != "" && !isDomainName(strings.ReplaceAll(c.SPFInclude, "_", "x")) { // _spf.example.com is usual
		return fail("CALLSIGN_SPF_INCLUDE", "%q is not a domain name", c.SPFInclude)
	}
	if c.DNSResolver = get("CALLSIGN_DNS_RESOLVER", ""); c.DNSResolver != "" {
		if c.DNSResolver, err = nameServer(c.DNSResolver); err != nil {
			return fail("CALLSIGN_DNS_RESOLVER", "%v", err)
		}
	}
	keyFiles, selectors := commaList(get("CALLSIGN_DKIM_KEY_FILE", "")), commaList(strings.ToLower(get("CALLSIGN_DKIM_SELECTOR", "")))
	switch {
	case len(keyFiles) != len(selectors):
		return fail("CALLSIGN_DKIM_KEY_FILE", "name one selector per key file in CALLSIGN_DKIM_SELECTOR, in the same order (%d files, %d selectors)", len(keyFiles), len(selectors))
	case len(keyFiles) > MaxPlatformDKIMKeys:
		return fail("CALLSIGN_DKIM_KEY_FILE", "at most %d keys (an RSA and an Ed25519 one), not %d", MaxPlatformDKIMKeys, len(keyFiles))
	}
	for i, path := range keyFiles {
		if !isDomainName(selectors[i]) {
			return fail("CALLSIGN_DKIM_SELECTOR", "%q is not a DNS name such as mail2026", selectors[i])
		}
		if i > 0 && selectors[i] == selectors[0] {
			return fail("CALLSIGN_DKIM_SELECTOR", "each key needs its own selector: %q is named twice", selectors[i])
		}
		c.PlatformDKIM = append(c.PlatformDKIM, DKIMKeyFile{Path: path, Selector: selectors[i]})
	}
	c.InboundAuth = strings.ToLower(get("CALLSIGN_INBOUND_AUTH", "on"))
	switch c.InboundAuth {
	case "on", "all", "off":
	default:
		return fail("CALLSIGN_INBOUND_AUTH", "%q is not one of on, all, off", c.InboundAuth)
	}

	c.Telephony = get("CALLSIGN_TELEPHONY", "sim")
	c.TwilioAccountSID, c.TwilioAuthToken = get("TWILIO_ACCOUNT_SID", ""), get("TWILIO_AUTH_TOKEN", "")
	switch c.Telephony {
	case "sim":
	case "twilio":
		if c.TwilioAccountSID == "" {
			return fail("TWILIO_ACCOUNT_SID", "required when CALLSIGN_TELEPHONY=twilio")
		}
		if c.TwilioAuthToken == "" {
			return fail("TWILIO_AUTH_TOKEN", "required when CALLSIGN_TELEPHONY=twilio")
		}
	default:
		return fail("CALLSIGN_TELEPHONY", "%q is not one of sim, twilio", c.Telephony)
	}

	if v := get("CALLSIGN_VAULT_KEY", ""); v != "" {
		if c.VaultKey, err = DecodeKey(v); err != nil {
			return fail("CALLSIGN_VAULT_KEY", "%v", err)
		}
	}
	if v := get("CALLSIGN_VAULT_PREVIOUS_KEYS", ""); v != "" {
		if c.VaultKey == nil {
			return fail("CALLSIGN_VAULT_PREVIOUS_KEYS", "only meaningful with CALLSIGN_VAULT_KEY")
		}
		for _, k := range strings.Split(v, ",") {
			key, err := DecodeKey(strings.TrimSpace(k))
			if err != nil {
				return fail("CALLSIGN_VAULT_PREVIOUS_KEYS", "%v", err)
			}
			c.VaultPreviousKeys = append(c.VaultPreviousKeys, key)
		}
	}
	if v := get("CALLSIGN_JWT_SECRET", ""); v != "" {
		if len(v) < 32 {
			return fail("CALLSIGN_JWT_SECRET", "use at least 32 characters")
		}
		c.JWTSecret = []byte(v)
	}

	c.OIDCIssuer, c.OIDCClientID, c.OIDCClientSecret = get("CALLSIGN_OIDC_ISSUER", ""), get("CALLSIGN_OIDC_CLIENT_ID", ""), get("CALLSIGN_OIDC_CLIENT_SECRET", "")
	if c.OIDCIssuer != "" {
		if u, err := url.Parse(c.OIDCIssuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fail("CALLSIGN_OIDC_ISSUER", "%q is not an absolute URL", c.OIDCIssuer)
		}
		if c.OIDCClientID == "" {
			return fail("CALLSIGN_OIDC_CLIENT_ID", "required with CALLSIGN_OIDC_ISSUER")
		}
	}

	if c.RateLimitPerSecond, c.RateLimitBurst, err = parseRateLimit(get("CALLSIGN_RATE_LIMIT", "20:40")); err != nil {
		return fail("CALLSIGN_RATE_LIMIT", "%v", err)
	}
	for _, p := range strings.Split(get("CALLSIGN_TRUSTED_PROXIES", ""), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if _, _, err := net.ParseCIDR(p); err != nil && net.ParseIP(p) == nil {
			return fail("CALLSIGN_TRUSTED_PROXIES", "%q is not an IP address or CIDR range", p)
		}
		c.TrustedProxies = append(c.TrustedProxies, p)
	}

	if c.MetricsAddr = get("CALLSIGN_METRICS_ADDR", ""); c.MetricsAddr != "" {
		if msg := checkListenAddr(c.MetricsAddr); msg != "" {
			return fail("CALLSIGN_METRICS_ADDR", "%s", msg)
		}
	}
	switch v := strings.ToLower(get("CALLSIGN_MCP", "on")); v {
	case "on":
		c.MCP = true
	case "off":
	default:
		return fail("CALLSIGN_MCP", "%q is not on or off", v)
	}
	if c.SourcesAllowPrivate, err = parseBool(get("CALLSIGN_SOURCES_ALLOW_PRIVATE", "false")); err != nil {
		return fail("CALLSIGN_SOURCES_ALLOW_PRIVATE", "%s", err)
	}
	if c.WebhookAllowPrivate, err = parseBool(get("CALLSIGN_WEBHOOK_ALLOW_PRIVATE", "false")); err != nil {
		return fail("CALLSIGN_WEBHOOK_ALLOW_PRIVATE", "%s", err)
	}
	if c.DebugAddr = get("CALLSIGN_DEBUG_ADDR", ""); c.DebugAddr != "" {
		if msg := checkListenAddr(c.DebugAddr); msg != "" {
			return fail("CALLSIGN_DEBUG_ADDR", "%s", msg)
		}
	}

	if c.ShutdownGrace, err = time.ParseDuration(get("CALLSIGN_SHUTDOWN_GRACE", "15s")); err != nil || c.ShutdownGrace <= 0 {
		return fail("CALLSIGN_SHUTDOWN_GRACE", "want a positive duration such as 15s or 1m")
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  string
		min  time.Duration
	}{
		{"CALLSIGN_OUTBOX_RETRY", &c.OutboxRetry, "30s", 100 * time.Millisecond},
		{"CALLSIGN_OUTBOX_RETRY_MAX", &c.OutboxRetryMax, "1h", 100 * time.Millisecond},
		{"CALLSIGN_OUTBOX_LEASE", &c.OutboxLease, "5m", 2 * time.Second},
		{"CALLSIGN_SOURCE_LEASE", &c.SourceLease, "30s", time.Second},
	} {
		if *d.v, err = time.ParseDuration(get(d.name, d.def)); err != nil || *d.v < d.min {
			return fail(d.name, "want a duration of at least %v, such as %s", d.min, d.def)
		}
	}
	if c.OutboxRetryMax < c.OutboxRetry {
		return fail("CALLSIGN_OUTBOX_RETRY_MAX", "shorter than CALLSIGN_OUTBOX_RETRY (%v)", c.OutboxRetry)
	}
	if c.EventRetention, err = time.ParseDuration(get("CALLSIGN_EVENT_RETENTION", "720h")); err != nil || c.EventRetention < time.Second {
		return fail("CALLSIGN_EVENT_RETENTION", "want a duration of at least 1s, such as 720h (30 days)")
	}

	c.LogLevel = strings.ToLower(get("CALLSIGN_LOG_LEVEL", "info"))
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fail("CALLSIGN_LOG_LEVEL", "%q is not one of debug, info, warn, error", c.LogLevel)
	}
	return c, nil
}

// parseBool reads true/false (also 1/0, yes/no, on/off).
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off", "":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", v)
}

// DecodeKey reads a base64 (standard or URL alphabet) 32-byte key.
func DecodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != 32 {
				return nil, fmt.Errorf("the key decodes to %d bytes; want 32 (generate one with: openssl rand -base64 32)", len(b))
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("not base64 (generate a key with: openssl rand -base64 32)")
}

func checkDatabaseURL(u string) string {
	if strings.Contains(u, "://") {
		parsed, err := url.Parse(u)
		if err != nil {
			return "cannot parse the URL: " + err.Error()
		}
		if parsed.Scheme != "postgres" && parsed.Scheme != "postgresql" {
			return fmt.Sprintf("scheme %q is not supported; use postgres:// or a SQLite file path", parsed.Scheme)
		}
		if parsed.Host == "" {
			return "the URL names no host"
		}
		if p := parsed.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return fmt.Sprintf("port %q out of range 1-65535", p)
			}
		}
		return ""
	}
	if strings.Contains(u, "?") {
		return "a SQLite path takes no options"
	}
	return ""
}

func checkListenAddr(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("%q is not host:port", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Sprintf("port %q out of range 0-65535", port)
	}
	return ""
}

func parseRelay(raw string) (*Relay, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("cannot parse the URL")
	}
	r := &Relay{Host: u.Hostname(), Port: u.Port()}
	switch u.Scheme {
	case "smtp":
		if r.Port == "" {
			r.Port = "587"
		}
	case "smtps":
		r.ImplicitTLS = true
		if r.Port == "" {
			r.Port = "465"
		}
	default:
		return nil, fmt.Errorf("scheme %q is not smtp or smtps", u.Scheme)
	}
	if r.Host == "" {
		return nil, fmt.Errorf("the URL names no host")
	}
	if n, err := strconv.Atoi(r.Port); err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("port %q out of range 1-65535", r.Port)
	}
	if u.User != nil {
		r.Username = u.User.Username()
		r.Password, _ = u.User.Password()
	}
	return r, nil
}

// parseSize reads a byte count with an optional KiB/MiB/GiB (or KB/MB/GB) suffix.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	lower := strings.ToLower(s)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1000}, {"mb", 1000 * 1000}, {"gb", 1000 * 1000 * 1000}, {"b", 1}} {
		if strings.HasSuffix(lower, u.suffix) {
			mult, lower = u.mult, strings.TrimSpace(strings.TrimSuffix(lower, u.suffix))
			break
		}
	}
	n, err := strconv.ParseInt(lower, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

// parseRateLimit reads "RATE:BURST" (requests per second and burst), "RATE"
// (burst twice the rate) or "off".
func parseRateLimit(s string) (float64, int, error) {
	if s == "off" || s == "0" {
		return 0, 0, nil
	}
	rateStr, burstStr, hasBurst := strings.Cut(s, ":")
	rate, err := strconv.ParseFloat(rateStr, 64)
	if err != nil || rate <= 0 {
		return 0, 0, fmt.Errorf("%q: want RATE:BURST such as 20:40 (requests per second, burst), or off", s)
	}
	burst := int(rate * 2)
	if hasBurst {
		if burst, err = strconv.Atoi(burstStr); err != nil || burst < 1 {
			return 0, 0, fmt.Errorf("%q: the burst must be a positive integer", s)
		}
	}
	if burst < 1 {
		burst = 1
	}
	return rate, burst, nil
}

// smtpHostname checks a configured SMTP name, or derives one from the host
// of the base URL. An IP address becomes an address literal (RFC 5321
// §4.1.3), since a bare IP is no valid EHLO argument.
func smtpHostname(configured, baseURL string) (string, error) {
	if configured != "" {
		name := strings.TrimSuffix(strings.ToLower(configured), ".")
		if inner, ok := strings.CutPrefix(name, "["); ok && strings.HasSuffix(inner, "]") {
			if net.ParseIP(strings.TrimPrefix(strings.TrimSuffix(inner, "]"), "ipv6:")) != nil {
				return configured, nil
			}
		} else if isDomainName(name) {
			return name, nil
		}
		return "", fmt.Errorf("%q is neither a domain name nor an address literal such as [192.0.2.1]", configured)
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Hostname() == "" {
		return "localhost", nil
	}
	return addressLiteral(u.Hostname()), nil
}

// mxHost checks a configured MX host, or takes our SMTP name when that is a
// host name. It is "" when all we know is an address (the default base URL's
// 127.0.0.1): an MX record names a host, never an address, so custom domains
// are told what to set instead.
func mxHost(configured, smtpHostname string) (string, error) {
	if configured != "" {
		name := strings.TrimSuffix(strings.ToLower(configured), ".")
		if !isDomainName(name) || net.ParseIP(name) != nil {
			return "", fmt.Errorf("%q is not a host name (an MX record names a host, never an address)", configured)
		}
		return name, nil
	}
	if strings.HasPrefix(smtpHostname, "[") { // an address literal
		return "", nil
	}
	return smtpHostname, nil
}

// DKIMKeyFile is a PEM private key that signs platform mail, and the
// selector its public key is published under.
type DKIMKeyFile struct {
	Path     string
	Selector string
}

// MaxPlatformDKIMKeys bounds the signatures on each platform message: an
// RSA key for every verifier and an Ed25519 one (RFC 8463) for those that
// know it, or two keys of one kind while one replaces the other.
const MaxPlatformDKIMKeys = 2

// commaList splits a comma-separated setting, without blanks around or
// between the commas.
func commaList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// nameServer checks a name server's address: an IP address with an
// optional port (53 by default); a name would need a resolver to find it.
func nameServer(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host, port = strings.Trim(s, "[]"), "53"
	}
	if net.ParseIP(host) == nil {
		return "", fmt.Errorf("%q is not an IP address with an optional port, such as 127.0.0.1:5353", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q out of range 1-65535", port)
	}
	return net.JoinHostPort(host, port), nil
}

// addressLiteral writes an IP address as RFC 5321 asks; a name stays as it is.
func addressLiteral(host string) string {
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return strings.ToLower(host)
	case ip.To4() != nil:
		return "[" + ip.String() + "]"
	default:
		return "[IPv6:" + ip.String() + "]"
	}
}

func isDomainName(d string) bool {
	if len(d) > 253 {
		return false
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}
