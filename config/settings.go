package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Setting is one environment variable: its name, its default, one line of
// documentation and how it is read into the Config. The table below is the
// one place each of these is written: Load walks it, the README's settings
// table is made from it (readme_test.go) and `callsign config` shows it.
type Setting struct {
	Name string
	// Default is the value an unset variable takes, as a user would write
	// it. "" means none, or a default that rules derive from other
	// settings; Unset then says what it is.
	Default string
	// Unset is the README's default column for a setting without a
	// Default: what an unset variable means ("unset: no external delivery").
	Unset string
	// Doc is the setting's line in the README's table.
	Doc string
	// Secret settings are never shown, only whether they are set.
	Secret bool
	value  value
}

// wantError says what a setting takes; Load adds the setting's default as
// an example.
type wantError string

func (e wantError) Error() string { return "want " + string(e) }

// value reads a setting's text into the Config, and shows it from there.
type value struct {
	parse func(c *Config, v string) error
	show  func(c *Config) string
}

// Settings are the settings in the README's order.
func Settings() []Setting { return slices.Clone(settings) }

// raw is the text a setting is read from: the variable, or its default.
func (s Setting) raw(getenv Getenv) string {
	if v := strings.TrimSpace(getenv(s.Name)); v != "" {
		return v
	}
	return s.Default
}

// Source says where the setting's value comes from: "environment" or "default".
func (s Setting) Source(getenv Getenv) string {
	if strings.TrimSpace(getenv(s.Name)) != "" {
		return "environment"
	}
	return "default"
}

// Shown is the setting's effective value in c for people to read: a secret
// is only said to be set, and a URL's password is masked.
func (s Setting) Shown(c Config) string {
	v := s.value.show(&c)
	if s.Secret && v != "" {
		return "(set, redacted)"
	}
	return v
}

// QuotaDefaults are the quotas of an unset CALLSIGN_QUOTA_*, by the names
// whoami shows, in the table's order.
var QuotaDefaults = quotaDefaults()

var settings = []Setting{
	{Name: "CALLSIGN_DATA_DIR", Default: "./data", Doc: "where the embedded database, the generated vault key and spooled files live",
		value: text(func(c *Config) *string { return &c.DataDir })},
	{Name: "CALLSIGN_DATABASE_URL", Unset: "SQLite file `callsign.db` in the data dir", Doc: "`postgres://…` selects PostgreSQL",
		value: databaseURL()},
	{Name: "CALLSIGN_HTTP_ADDR", Default: "127.0.0.1:8080", Doc: "REST API",
		value: listenAddr(func(c *Config) *string { return &c.HTTPAddr })},
	{Name: "CALLSIGN_SMTP_ADDR", Default: "127.0.0.1:2525", Doc: "inbound SMTP listener",
		value: listenAddr(func(c *Config) *string { return &c.SMTPAddr })},
	{Name: "CALLSIGN_IMAP_ADDR", Default: "127.0.0.1:1143", Doc: "IMAP access for mail clients (user: the inbox address; password: an identity key of its identity); plaintext logins only when it listens on loopback, STARTTLS when a certificate is set",
		value: listenAddr(func(c *Config) *string { return &c.IMAPAddr })},
	{Name: "CALLSIGN_IMAPS_ADDR", Doc: "IMAP with implicit TLS (e.g. `0.0.0.0:993`); needs `CALLSIGN_SMTP_TLS_CERT` or `CALLSIGN_ACME=on`",
		value: listenAddr(func(c *Config) *string { return &c.IMAPSAddr })},
	{Name: "CALLSIGN_BASE_URL", Unset: "`http://` + `CALLSIGN_HTTP_ADDR`", Doc: "absolute URLs in responses and webhooks",
		value: textAs(func(c *Config) *string { return &c.BaseURL }, func(v string) (string, error) {
			v = strings.TrimSuffix(v, "/")
			return v, checkBaseURL(v)
		})},
	{Name: "CALLSIGN_MAIL_DOMAINS", Default: "agents.localhost", Doc: "platform mail domains, comma-separated; the first is the default",
		value: mailDomains()},

	{Name: "CALLSIGN_SMTP_MAX_BYTES", Default: "25MiB", Doc: "largest message accepted over SMTP, and largest upload",
		value: size(func(c *Config) *int64 { return &c.SMTPMaxBytes }, 1<<10)},
	{Name: "CALLSIGN_SMTP_MAX_SESSIONS", Default: "1000", Doc: "concurrent inbound SMTP sessions; one more is answered `421 4.7.0`",
		value: count(func(c *Config) *int { return &c.SMTPMaxSessions })},
	{Name: "CALLSIGN_SMTP_MAX_SESSIONS_PER_IP", Default: "50", Doc: "concurrent inbound SMTP sessions from one client address",
		value: count(func(c *Config) *int { return &c.SMTPMaxSessionsPerIP })},
	{Name: "CALLSIGN_SMTP_DATA_TIMEOUT", Default: "10m", Doc: "a DATA transfer's deadline from its start; a whole session gets three times it",
		value: duration(func(c *Config) *time.Duration { return &c.SMTPDataTimeout }, 0)},
	{Name: "CALLSIGN_SMTP_MAX_INFLIGHT_BYTES", Default: "256MiB", Doc: "bytes of DATA all inbound SMTP sessions hold at once, from the first byte until stored; past it a message hears `451 4.3.1` and its sender retries. At least `CALLSIGN_SMTP_MAX_BYTES`. Messages over 1 MiB are read into an unlinked temporary file in the data directory",
		value: size(func(c *Config) *int64 { return &c.SMTPMaxInflightBytes }, 0)},
	{Name: "CALLSIGN_SMTP_TLS_CERT", Doc: "PEM certificate file; with `CALLSIGN_SMTP_TLS_KEY`, SMTP offers STARTTLS and IMAP offers TLS",
		value: text(func(c *Config) *string { return &c.SMTPTLSCert })},
	{Name: "CALLSIGN_SMTP_TLS_KEY", Doc: "the certificate's PEM private key file",
		value: text(func(c *Config) *string { return &c.SMTPTLSKey })},
	{Name: "CALLSIGN_ACME", Default: "off", Doc: "`on` obtains and renews certificates by ACME (see \"Certificates by ACME\") for HTTPS, SMTP STARTTLS and IMAP, instead of `CALLSIGN_SMTP_TLS_CERT`",
		value: onOff(func(c *Config) *bool { return &c.ACME })},
	{Name: "CALLSIGN_ACME_EMAIL", Doc: "the contact address of the ACME account; required with `CALLSIGN_ACME=on`",
		value: textAs(func(c *Config) *string { return &c.ACMEEmail }, bareAddress)},
	{Name: "CALLSIGN_ACME_DIRECTORY", Default: LetsEncryptDirectory, Doc: "the ACME directory URL of the certificate authority",
		value: textAs(func(c *Config) *string { return &c.ACMEDirectory }, absoluteURL)},
	{Name: "CALLSIGN_HTTPS_ADDR", Doc: "HTTPS listener for the REST API (e.g. `0.0.0.0:443`), with certificates by ACME; `CALLSIGN_HTTP_ADDR` then redirects to it, except for ACME's `http-01` challenges",
		value: listenAddr(func(c *Config) *string { return &c.HTTPSAddr })},
	{Name: "CALLSIGN_SMTP_RELAY", Unset: "unset: no external delivery", Doc: "`smtp://[user:pass@]host:port` uses STARTTLS when the relay offers it, and requires it when the URL carries credentials (except on loopback); `smtps://…` is implicit TLS",
		value: relay()},
	{Name: "CALLSIGN_SMTP_RELAY_CA", Unset: "unset: the system's roots", Doc: "PEM file of the CAs to trust for the relay's certificate",
		value: text(func(c *Config) *string { return &c.SMTPRelayCA })},
	{Name: "CALLSIGN_MAIL_PROVIDER", Default: "smtp", Doc: "what carries outbound mail: `smtp` (the relay of `CALLSIGN_SMTP_RELAY`), `ses` (Amazon SES) or `mailgun`; each sends our exact, DKIM-signed bytes (see docs/providers.md)",
		value: oneOf(func(c *Config) *string { return &c.MailProvider }, "smtp", "ses", "mailgun")},
	{Name: "CALLSIGN_SES_REGION", Doc: "the AWS region of the SES account (`eu-west-1`); required with `CALLSIGN_MAIL_PROVIDER=ses`. Credentials come from the AWS SDK's default chain (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, shared config, a role)",
		value: textAs(func(c *Config) *string { return &c.SESRegion }, func(v string) (string, error) {
			if v = strings.ToLower(v); !isDomainName(v) || strings.Contains(v, ".") {
				return "", fmt.Errorf("%q is not an AWS region such as eu-west-1", v)
			}
			return v, nil
		})},
	{Name: "CALLSIGN_SES_ENDPOINT", Unset: "unset: AWS's endpoint for the region", Doc: "another SES API endpoint (an SES-compatible service)",
		value: textAs(func(c *Config) *string { return &c.SESEndpoint }, absoluteURL)},
	{Name: "CALLSIGN_SES_CONFIGURATION_SET", Doc: "the SES configuration set to send with (event destinations, dedicated IPs)",
		value: text(func(c *Config) *string { return &c.SESConfigurationSet })},
	{Name: "CALLSIGN_MAILGUN_API_KEY", Doc: "the Mailgun API key; required with `CALLSIGN_MAIL_PROVIDER=mailgun`", Secret: true,
		value: text(func(c *Config) *string { return &c.MailgunAPIKey })},
	{Name: "CALLSIGN_MAILGUN_API_BASE", Default: "https://api.mailgun.net/v3", Doc: "Mailgun's API with its version; `https://api.eu.mailgun.net/v3` for the EU region",
		value: textAs(func(c *Config) *string { return &c.MailgunAPIBase }, absoluteURL)},
	{Name: "CALLSIGN_SMTP_HOSTNAME", Unset: "the host of `CALLSIGN_BASE_URL` (an IP as an address literal, `[127.0.0.1]`)", Doc: "our name in the SMTP greeting, in EHLO to the relay and in `Received:`",
		value: textAs(func(c *Config) *string { return &c.SMTPHostname }, checkSMTPHostname)},
	{Name: "CALLSIGN_POSTMASTER", Unset: "unset: the service's oldest inbox", Doc: "the inbox that receives `postmaster@` each platform domain (RFC 5321 §4.5.1)",
		value: textAs(func(c *Config) *string { return &c.Postmaster }, bareAddress)},
	{Name: "CALLSIGN_MX_HOST", Unset: "`CALLSIGN_SMTP_HOSTNAME` when that is a name; else none", Doc: "the host custom domains' MX records must point at (a name, never an IP); without one, custom domains list no MX record and cannot be verified",
		value: textAs(func(c *Config) *string { return &c.MXHost }, checkMXHost)},
	{Name: "CALLSIGN_SPF_INCLUDE", Doc: "a domain whose SPF policy authorizes your relay (e.g. `_spf.relay.example`); custom domains' SPF records then include it",
		value: textAs(func(c *Config) *string { return &c.SPFInclude }, func(v string) (string, error) {
			v = strings.TrimSuffix(strings.ToLower(v), ".")
			if !isDomainName(strings.ReplaceAll(v, "_", "x")) { // _spf.example.com is usual
				return "", fmt.Errorf("%q is not a domain name", v)
			}
			return v, nil
		})},
	{Name: "CALLSIGN_TLS_REPORTS_TO", Unset: "unset: no TLS reporting record is asked for", Doc: "the address senders' TLS reports (RFC 8460) for custom domains go to; each domain is then asked for a `_smtp._tls` record naming it",
		value: textAs(func(c *Config) *string { return &c.TLSReportsTo }, bareAddress)},
	{Name: "CALLSIGN_DNS_RESOLVER", Unset: "unset: the name servers of `/etc/resolv.conf`", Doc: "the name server to ask, an IP with an optional port (`127.0.0.1:5353`); answers are cached by their TTL and each lookup gives up after 2 s",
		value: textAs(func(c *Config) *string { return &c.DNSResolver }, nameServer)},
	{Name: "CALLSIGN_DKIM_KEY_FILE", Unset: "unset: platform mail is not signed", Doc: "one or two PEM private keys (PKCS #1 or PKCS #8; RSA or Ed25519), comma-separated: mail from the platform domains carries one DKIM signature per key, the first key's on top (see below)",
		value: dkim(func(k *DKIMKeyFile) *string { return &k.Path }, func(v string) (string, error) { return v, nil })},
	{Name: "CALLSIGN_DKIM_SELECTOR", Doc: "as many selectors as key files, in the same order (`rsa.pem,ed25519.pem` with `mail2026r,mail2026e`)",
		value: dkim(func(k *DKIMKeyFile) *string { return &k.Selector }, func(v string) (string, error) {
			if v = strings.ToLower(v); !isDomainName(v) {
				return "", fmt.Errorf("%q is not a DNS name such as mail2026", v)
			}
			return v, nil
		})},
	{Name: "CALLSIGN_INBOUND_AUTH", Default: "on", Doc: "SPF, DKIM and DMARC checks of received mail: `on` checks every connection but loopback ones (local tools keep working offline), `all` checks loopback too, `off` checks nothing",
		value: oneOf(func(c *Config) *string { return &c.InboundAuth }, "on", "all", "off")},
	{Name: "CALLSIGN_RSPAMD_URL", Unset: "unset: no spam check", Doc: "rspamd's controller (`http://127.0.0.1:11334`): every received message is checked there (`/checkv2`) and what a person marks as spam or not teaches it (`/learnspam`, `/learnham`); the operator's address, dialled directly. See docs/api.md (\"Spam\")",
		value: textAs(func(c *Config) *string { return &c.RspamdURL }, func(v string) (string, error) {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return "", fmt.Errorf("%q is not an absolute URL", v)
			}
			return strings.TrimSuffix(v, "/"), nil
		})},
	{Name: "CALLSIGN_RSPAMD_PASSWORD", Unset: "unset: none sent", Doc: "the controller's password (its `Password` header), when rspamd asks for one", Secret: true,
		value: text(func(c *Config) *string { return &c.RspamdPassword })},
	{Name: "CALLSIGN_RSPAMD_TIMEOUT", Default: "5s", Doc: "how long one check or lesson may take; a message rspamd does not judge in time is accepted unjudged (`spam: null`)",
		value: duration(func(c *Config) *time.Duration { return &c.RspamdTimeout }, 10*time.Millisecond)},

	{Name: "CALLSIGN_MAILGUN_WEBHOOK_SIGNING_KEY", Unset: "unset: Mailgun's webhooks are refused (403)", Doc: "the Mailgun account's HTTP webhook signing key: `/webhooks/mailgun/events/` and `/webhooks/mailgun/mime` take posts signed with it (at most 5 minutes old, each token once)", Secret: true,
		value: text(func(c *Config) *string { return &c.MailgunWebhookSigningKey })},
	{Name: "CALLSIGN_SNS_TOPIC_ARNS", Unset: "unset: SNS messages are refused (403)", Doc: "comma-separated ARNs of the SNS topics SES publishes to; `/webhooks/ses/` takes messages of these topics only",
		value: list(func(c *Config) *[]string { return &c.SNSTopicARNs }, func(v string) (string, error) {
			if !strings.HasPrefix(v, "arn:") || strings.Count(v, ":") < 5 {
				return "", fmt.Errorf("%q is not a topic ARN such as arn:aws:sns:eu-west-1:123456789012:callsign", v)
			}
			return v, nil
		})},
	{Name: "CALLSIGN_SNS_CERT_FILE", Unset: "unset: the certificate is fetched from `https://sns.<region>.amazonaws.com/` and cached", Doc: "a PEM certificate that SNS signatures must verify with (air-gapped installs, tests); then a message's `SigningCertURL` is not used and nothing is fetched",
		value: text(func(c *Config) *string { return &c.SNSCertFile })},

	{Name: "CALLSIGN_TELEPHONY", Default: "sim", Doc: "`sim`, `twilio` or `telnyx` (docs/providers.md)",
		value: oneOf(func(c *Config) *string { return &c.Telephony }, "sim", "twilio", "telnyx")},
	{Name: "TWILIO_ACCOUNT_SID", Doc: "Twilio's own name; required with `CALLSIGN_TELEPHONY=twilio`",
		value: text(func(c *Config) *string { return &c.TwilioAccountSID })},
	{Name: "TWILIO_AUTH_TOKEN", Doc: "Twilio's own name; required with `CALLSIGN_TELEPHONY=twilio`", Secret: true,
		value: text(func(c *Config) *string { return &c.TwilioAuthToken })},
	{Name: "TELNYX_API_KEY", Doc: "a Telnyx API key (v2); required with `CALLSIGN_TELEPHONY=telnyx`", Secret: true,
		value: text(func(c *Config) *string { return &c.TelnyxAPIKey })},
	{Name: "TELNYX_PUBLIC_KEY", Doc: "the account's base64 Ed25519 public key, which checks Telnyx's webhook signatures; required with `CALLSIGN_TELEPHONY=telnyx`",
		value: text(func(c *Config) *string { return &c.TelnyxPublicKey })},
	{Name: "TELNYX_MESSAGING_PROFILE_ID", Doc: "the messaging profile every number bought joins; its webhook URL is `{base_url}/webhooks/telnyx/messaging/`; required with `CALLSIGN_TELEPHONY=telnyx`",
		value: text(func(c *Config) *string { return &c.TelnyxMessagingProfileID })},
	{Name: "TELNYX_CONNECTION_ID", Doc: "the TeXML application every number's calls go to (voice URL `{base_url}/webhooks/telnyx/voice/`, status callback `{base_url}/webhooks/telnyx/call-status/`); required with `CALLSIGN_TELEPHONY=telnyx`",
		value: text(func(c *Config) *string { return &c.TelnyxConnectionID })},
	{Name: "CALLSIGN_TELNYX_API_BASE", Default: "https://api.telnyx.com/v2", Doc: "Telnyx's API, version included",
		value: textAs(func(c *Config) *string { return &c.TelnyxAPIBase }, func(v string) (string, error) {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return "", fmt.Errorf("%q is not an absolute URL", v)
			}
			return strings.TrimSuffix(v, "/"), nil
		})},
	{Name: "CALLSIGN_VAULT_KEY", Unset: "generated once into the data dir (mode 0600)", Doc: "base64 32-byte key for vault encryption", Secret: true,
		value: vaultKey()},
	{Name: "CALLSIGN_VAULT_PREVIOUS_KEYS", Doc: "comma-separated base64 keys still accepted for reading during a key rotation", Secret: true,
		value: previousVaultKeys()},
	{Name: "CALLSIGN_JWT_SECRET", Unset: "generated once into the data dir (`jwt.key`, mode 0600)", Doc: "signs access, refresh and session tokens and the device-login page's forms (at least 32 characters; give every instance the same)", Secret: true,
		value: jwtSecret()},
	{Name: "CALLSIGN_OIDC_ISSUER", Doc: "an OpenID Connect provider for the device-login page; register `{base_url}/api/auth/device/callback/` as its redirect URI",
		value: textAs(func(c *Config) *string { return &c.OIDCIssuer }, func(v string) (string, error) {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return "", fmt.Errorf("%q is not an absolute URL", v)
			}
			return v, nil
		})},
	{Name: "CALLSIGN_OIDC_CLIENT_ID", Doc: "the client registered at the provider; required with `CALLSIGN_OIDC_ISSUER`",
		value: text(func(c *Config) *string { return &c.OIDCClientID })},
	{Name: "CALLSIGN_OIDC_CLIENT_SECRET", Doc: "the client's secret at the provider", Secret: true,
		value: text(func(c *Config) *string { return &c.OIDCClientSecret })},

	{Name: "CALLSIGN_RATE_LIMIT", Default: "20:40", Doc: "requests per second and burst, per key, and per client address on the sign-in and device routes (`off` disables); per instance: with N instances, set each to the wanted rate divided by N",
		value: rateLimit()},
	{Name: "CALLSIGN_MAX_STREAMS_PER_KEY", Default: "10", Doc: "event streams and long polls (`wait`) open at once per key; one more is `429` with `Retry-After`; per instance",
		value: count(func(c *Config) *int { return &c.MaxStreamsPerKey })},
	{Name: "CALLSIGN_MAX_STREAMS_PER_ACCOUNT", Default: "100", Doc: "the same per account, whatever the key; per instance",
		value: count(func(c *Config) *int { return &c.MaxStreamsPerAccount })},
	{Name: "CALLSIGN_TRUSTED_PROXIES", Doc: "reverse proxies (IPs or CIDRs, comma-separated) whose `X-Forwarded-For` names the client for per-address limits",
		value: list(func(c *Config) *[]string { return &c.TrustedProxies }, func(p string) (string, error) {
			if _, _, err := net.ParseCIDR(p); err != nil && net.ParseIP(p) == nil {
				return "", fmt.Errorf("%q is not an IP address or CIDR range", p)
			}
			return p, nil
		})},
	{Name: "CALLSIGN_LOG_LEVEL", Default: "info", Doc: "`debug`, `info`, `warn` or `error`",
		value: oneOf(func(c *Config) *string { return &c.LogLevel }, "debug", "info", "warn", "error")},
	{Name: "CALLSIGN_OUTBOX_RETRY", Default: "30s", Doc: "the pause after a delivery attempt that failed for now (relay down, `4xx`), doubling per attempt; a message is given up after 48 h",
		value: duration(func(c *Config) *time.Duration { return &c.OutboxRetry }, 100*time.Millisecond)},
	{Name: "CALLSIGN_OUTBOX_RETRY_MAX", Default: "1h", Doc: "the longest pause between two attempts",
		value: duration(func(c *Config) *time.Duration { return &c.OutboxRetryMax }, 100*time.Millisecond)},
	{Name: "CALLSIGN_OUTBOX_LEASE", Default: "5m", Doc: "how long a message being sent is its worker's (at least `2s`); the relay gets at most half of it (and at most 2 minutes) per attempt, and a message whose process died (`kill -9`) is sent again after it",
		value: duration(func(c *Config) *time.Duration { return &c.OutboxLease }, 2*time.Second)},
	{Name: "CALLSIGN_SHUTDOWN_GRACE", Default: "15s", Doc: "how long a stopping service waits for requests, SMTP sessions and deliveries in flight",
		value: duration(func(c *Config) *time.Duration { return &c.ShutdownGrace }, 0)},

	// The quotas: room for a busy agent fleet on a shared deployment, with
	// phone numbers (which cost money) and sending (which costs the relay's
	// reputation) held closer. Their order is core's.
	quota("storage", "5GiB", "bytes of mail one account may store (each message's source, attachments included, and uploaded files); at the quota new mail gets `452 4.2.2` at RCPT and sending/uploading is 403. `0` is unlimited, as for every quota"),
	quota("identities", "100", "identities per account (403 beyond)"),
	quota("inboxes", "500", "inboxes per account, each identity's first included (403 beyond)"),
	quota("phones", "10", "phone numbers per account (403 beyond)"),
	quota("vault_items", "1000", "passwords and secrets per identity (403 beyond)"),
	quota("sends_per_hour", "200", "mail, texts and placed calls one account sends in any hour (429 with `Retry-After` beyond)"),
	quota("active_calls", "10", "calls in progress per account; placing one more is 429 with `Retry-After`"),
	quota("webhooks_per_identity", "10", "webhooks an identity key may hold for its identity (403 beyond); management keys are held to the account's 100"),

	{Name: "CALLSIGN_EVENT_RETENTION", Default: "720h", Doc: "how long events are kept for `GET /api/events/` and its stream (a Go duration, at least `1s`)",
		value: duration(func(c *Config) *time.Duration { return &c.EventRetention }, time.Second)},
	{Name: "CALLSIGN_CALL_MAX_DURATION", Default: "4h", Doc: "longest call: a streamed call is hung up then (its `end_reason` says `max_duration`), and placed calls carry it to the provider as their time limit (at least `1s`)",
		value: duration(func(c *Config) *time.Duration { return &c.CallMaxDuration }, time.Second)},
	{Name: "CALLSIGN_WEBHOOK_ALLOW_PRIVATE", Default: "false", Doc: "let webhooks, and voice agents' WebSockets, reach loopback, private and link-local addresses (tests, local development only)",
		value: boolean(func(c *Config) *bool { return &c.WebhookAllowPrivate })},
	{Name: "CALLSIGN_DEBUG_ADDR", Doc: "when set (keep it on loopback), Go's profiler is served there at `/debug/pprof/`",
		value: listenAddr(func(c *Config) *string { return &c.DebugAddr })},
	{Name: "CALLSIGN_SOURCE_LEASE", Default: "30s", Doc: "each IMAP source is pulled by one instance at a time, which holds it for this long and renews it every third of it; when an instance dies, another takes its sources over within about 1⅓ of this (at least `1s`)",
		value: duration(func(c *Config) *time.Duration { return &c.SourceLease }, time.Second)},
	{Name: "CALLSIGN_SOURCES_ALLOW_PRIVATE", Default: "false", Doc: "`true` lets IMAP sources connect to loopback, private, link-local and metadata addresses (tests, local development); otherwise such hosts are refused",
		value: boolean(func(c *Config) *bool { return &c.SourcesAllowPrivate })},
	{Name: "CALLSIGN_MCP", Default: "on", Doc: "`off` makes `/mcp` (the Model Context Protocol over streamable HTTP) 404",
		value: onOff(func(c *Config) *bool { return &c.MCP })},
	{Name: "CALLSIGN_METRICS_ADDR", Unset: "unset: off", Doc: "when set (keep it on loopback, or behind a firewall), Prometheus metrics are served there at `/metrics`",
		value: listenAddr(func(c *Config) *string { return &c.MetricsAddr })},
}

const quotaPrefix = "CALLSIGN_QUOTA_"

// quota is the setting of the quota whoami calls name: storage is a size,
// the others counts; 0 is unlimited.
func quota(name, def, doc string) Setting {
	read, show := func(v string) (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, errors.New("want a whole number, or 0 for no limit")
		}
		return n, nil
	}, func(n int64) string { return strconv.FormatInt(n, 10) }
	if name == "storage" {
		read = func(v string) (int64, error) {
			n, err := parseSize(v)
			if err != nil {
				return 0, errors.New("want a size such as 5GiB or 5368709120, or 0 for no limit")
			}
			return n, nil
		}
		show = formatSize
	}
	return Setting{Name: quotaPrefix + strings.ToUpper(name), Default: def, Doc: doc, value: value{
		parse: func(c *Config, v string) (err error) {
			c.Quotas[name], err = read(v)
			return err
		},
		show: func(c *Config) string { return show(c.Quotas[name]) },
	}}
}

func quotaDefaults() []struct{ Name, Default string } {
	var out []struct{ Name, Default string }
	for _, s := range settings {
		if name, ok := strings.CutPrefix(s.Name, quotaPrefix); ok {
			out = append(out, struct{ Name, Default string }{strings.ToLower(name), s.Default})
		}
	}
	return out
}

// textAs reads a string setting through read, which checks it and gives
// what to keep. An empty value is kept as it is: unset, or left for a rule
// to derive.
func textAs(field func(*Config) *string, read func(string) (string, error)) value {
	return value{
		parse: func(c *Config, v string) error {
			if v != "" {
				var err error
				if v, err = read(v); err != nil {
					return err
				}
			}
			*field(c) = v
			return nil
		},
		show: func(c *Config) string { return *field(c) },
	}
}

// text is a string setting taken as it is.
func text(field func(*Config) *string) value {
	return textAs(field, func(v string) (string, error) { return v, nil })
}

// listenAddr is a host:port to listen on.
func listenAddr(field func(*Config) *string) value {
	return textAs(field, func(v string) (string, error) {
		if msg := checkListenAddr(v); msg != "" {
			return "", errors.New(msg)
		}
		return v, nil
	})
}

// oneOf is one of a few words, in any case.
func oneOf(field func(*Config) *string, choices ...string) value {
	return textAs(field, func(v string) (string, error) {
		if v = strings.ToLower(v); !slices.Contains(choices, v) {
			return "", fmt.Errorf("%q is not one of %s", v, strings.Join(choices, ", "))
		}
		return v, nil
	})
}

// list is a comma-separated list, each item read by read.
func list(field func(*Config) *[]string, read func(string) (string, error)) value {
	return value{
		parse: func(c *Config, v string) error {
			for _, item := range commaList(v) {
				item, err := read(item)
				if err != nil {
					return err
				}
				*field(c) = append(*field(c), item)
			}
			return nil
		},
		show: func(c *Config) string { return strings.Join(*field(c), ",") },
	}
}

func mailDomains() value {
	v := list(func(c *Config) *[]string { return &c.MailDomains }, func(d string) (string, error) {
		if d = strings.TrimSuffix(strings.ToLower(d), "."); !isDomainName(d) {
			return "", fmt.Errorf("%q is not a domain name", d)
		}
		return d, nil
	})
	parse := v.parse
	v.parse = func(c *Config, s string) error {
		if err := parse(c, s); err != nil {
			return err
		}
		if len(c.MailDomains) == 0 {
			return errors.New("at least one domain is needed")
		}
		return nil
	}
	return v
}

// count is a whole number of at least 1.
func count(field func(*Config) *int) value {
	return value{
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return wantError("a whole number of at least 1")
			}
			*field(c) = n
			return nil
		},
		show: func(c *Config) string { return strconv.Itoa(*field(c)) },
	}
}

// size is a byte count (25MiB, 26214400) of at least least.
func size(field func(*Config) *int64, least int64) value {
	return value{
		parse: func(c *Config, v string) error {
			n, err := parseSize(v)
			switch {
			case (err != nil || n < least) && least > 0:
				return wantError("a size of at least " + formatSize(least))
			case err != nil:
				return wantError("a size")
			}
			*field(c) = n
			return nil
		},
		show: func(c *Config) string { return formatSize(*field(c)) },
	}
}

// duration is a Go duration, positive or of at least least.
func duration(field func(*Config) *time.Duration, least time.Duration) value {
	return value{
		parse: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			switch {
			case (err != nil || d < least) && least > 0:
				return wantError("a duration of at least " + least.String())
			case err != nil || d <= 0:
				return wantError("a positive duration")
			}
			*field(c) = d
			return nil
		},
		show: func(c *Config) string { return formatDuration(*field(c)) },
	}
}

// boolean is true or false (also 1/0, yes/no, on/off).
func boolean(field func(*Config) *bool) value {
	return value{
		parse: func(c *Config, v string) (err error) {
			*field(c), err = parseBool(v)
			return err
		},
		show: func(c *Config) string { return strconv.FormatBool(*field(c)) },
	}
}

// onOff is on or off, in any case.
func onOff(field func(*Config) *bool) value {
	return value{
		parse: func(c *Config, v string) error {
			switch v = strings.ToLower(v); v {
			case "on", "off":
				*field(c) = v == "on"
				return nil
			}
			return fmt.Errorf("%q is not on or off", v)
		},
		show: func(c *Config) string {
			if *field(c) {
				return "on"
			}
			return "off"
		},
	}
}

// dkim is one half of the platform DKIM keys: a comma-separated list whose
// items go, in order, into the part of PlatformDKIM that part picks; the
// rule dkimKeysPaired checks the halves pair up.
func dkim(part func(*DKIMKeyFile) *string, read func(string) (string, error)) value {
	return value{
		parse: func(c *Config, v string) error {
			for i, item := range commaList(v) {
				item, err := read(item)
				if err != nil {
					return err
				}
				if i == len(c.PlatformDKIM) {
					c.PlatformDKIM = append(c.PlatformDKIM, DKIMKeyFile{})
				}
				*part(&c.PlatformDKIM[i]) = item
			}
			return nil
		},
		show: func(c *Config) string {
			var items []string
			for i := range c.PlatformDKIM {
				items = append(items, *part(&c.PlatformDKIM[i]))
			}
			return strings.Join(items, ",")
		},
	}
}

func databaseURL() value {
	v := textAs(func(c *Config) *string { return &c.DatabaseURL }, func(u string) (string, error) {
		if msg := checkDatabaseURL(u); msg != "" {
			return "", errors.New(msg)
		}
		return u, nil
	})
	v.show = func(c *Config) string { return redactURL(c.DatabaseURL) }
	return v
}

func relay() value {
	return value{
		parse: func(c *Config, v string) (err error) {
			if v != "" {
				c.SMTPRelay, err = parseRelay(v)
			}
			return err
		},
		show: func(c *Config) string {
			r := c.SMTPRelay
			if r == nil {
				return ""
			}
			u := url.URL{Scheme: "smtp", Host: r.Addr()}
			if r.ImplicitTLS {
				u.Scheme = "smtps"
			}
			if r.Username != "" || r.Password != "" {
				u.User = url.UserPassword(r.Username, r.Password)
			}
			return u.Redacted()
		},
	}
}

func rateLimit() value {
	return value{
		parse: func(c *Config, v string) (err error) {
			c.RateLimitPerSecond, c.RateLimitBurst, err = parseRateLimit(v)
			return err
		},
		show: func(c *Config) string {
			if c.RateLimitPerSecond == 0 {
				return "off"
			}
			return strconv.FormatFloat(c.RateLimitPerSecond, 'g', -1, 64) + ":" + strconv.Itoa(c.RateLimitBurst)
		},
	}
}

func vaultKey() value {
	return value{
		parse: func(c *Config, v string) (err error) {
			if v != "" {
				c.VaultKey, err = DecodeKey(v)
			}
			return err
		},
		show: func(c *Config) string { return encodeKeys(c.VaultKey) },
	}
}

func previousVaultKeys() value {
	return value{
		parse: func(c *Config, v string) error {
			for _, k := range commaList(v) {
				key, err := DecodeKey(k)
				if err != nil {
					return err
				}
				c.VaultPreviousKeys = append(c.VaultPreviousKeys, key)
			}
			return nil
		},
		show: func(c *Config) string { return encodeKeys(c.VaultPreviousKeys...) },
	}
}

func jwtSecret() value {
	return value{
		parse: func(c *Config, v string) error {
			switch {
			case v == "":
				return nil
			case len(v) < 32:
				return errors.New("use at least 32 characters")
			}
			c.JWTSecret = []byte(v)
			return nil
		},
		show: func(c *Config) string { return string(c.JWTSecret) },
	}
}

func encodeKeys(keys ...[]byte) string {
	var out []string
	for _, k := range keys {
		if k != nil {
			out = append(out, base64.StdEncoding.EncodeToString(k))
		}
	}
	return strings.Join(out, ",")
}

// redactURL masks a URL's password; a path (a SQLite file) stays as it is.
func redactURL(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "(unreadable URL, redacted)"
	}
	return u.Redacted()
}

// formatSize writes a byte count in the largest binary unit that divides it.
func formatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// formatDuration writes a duration as a person would: 1h, not 1h0m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// absoluteURL is an http(s) URL with a host.
func absoluteURL(v string) (string, error) {
	v = strings.TrimSuffix(v, "/")
	return v, absoluteURLCheck(v)
}

func absoluteURLCheck(v string) error {
	if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", v)
	}
	return nil
}

// bareAddress reads an email address without a display name, lower-cased.
func bareAddress(v string) (string, error) {
	v = strings.ToLower(v)
	if _, err := mail.ParseAddress(v); err != nil || strings.ContainsAny(v, "<> ") {
		return "", fmt.Errorf("%q is not an email address", v)
	}
	return v, nil
}
