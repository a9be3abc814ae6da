// Package config reads Callsign's configuration from the environment into
// one typed struct. Every variable has a default that runs on a laptop with
// nothing installed; a bad value fails with an error naming the variable.
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
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
	// ACME (CALLSIGN_ACME) obtains certificates from ACMEDirectory for the
	// base URL's host, the MX host and custom domains' MTA-STS hosts;
	// HTTPS is then served on HTTPSAddr.
	ACME          bool
	ACMEEmail     string
	ACMEDirectory string
	HTTPSAddr     string
	SMTPRelay     *Relay // nil: no external delivery
	SMTPRelayCA   string // PEM file of CAs to trust for the relay; "" means the system's
	// MailProvider carries outbound mail: "smtp" (SMTPRelay), "ses" or "mailgun".
	MailProvider        string
	SESRegion           string
	SESEndpoint         string // "" means AWS's endpoint for SESRegion
	SESConfigurationSet string
	MailgunAPIKey       string
	MailgunAPIBase      string // with its version, e.g. https://api.mailgun.net/v3

	Telephony        string // "sim", "twilio" or "telnyx"
	TwilioAccountSID string
	TwilioAuthToken  string
	// Telnyx (CALLSIGN_TELEPHONY=telnyx): TELNYX_PUBLIC_KEY is checked where
	// it is used, by the adapter's verifier.
	TelnyxAPIKey, TelnyxPublicKey, TelnyxMessagingProfileID, TelnyxConnectionID string
	TelnyxAPIBase                                                               string

	// Mail providers' webhooks (issue 29): unset, they are refused.
	MailgunWebhookSigningKey string
	SNSTopicARNs             []string
	SNSCertFile              string // a PEM pinned for SNS signatures; "" fetches SNS's

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
	// CallMaxDuration bounds a call (CALLSIGN_CALL_MAX_DURATION).
	CallMaxDuration time.Duration
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
	// TLSReportsTo, when set, is where custom domains' TLS reports go.
	TLSReportsTo string
	// DNSResolver is the name server to ask (IP:port); "" means the system's.
	DNSResolver string
	// PlatformDKIM are the keys that sign platform domains' mail, each
	// under its own selector (CALLSIGN_DKIM_KEY_FILE, CALLSIGN_DKIM_SELECTOR:
	// comma-separated lists, paired in order); none when unset.
	PlatformDKIM []DKIMKeyFile
	// InboundAuth says which inbound connections get SPF, DKIM and DMARC
	// checks: "on" (all but loopback), "all" or "off".
	InboundAuth string
	// RspamdURL is the spam filter's controller (CALLSIGN_RSPAMD_URL); ""
	// checks nothing. RspamdTimeout bounds one call to it.
	RspamdURL      string
	RspamdPassword string
	RspamdTimeout  time.Duration

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

// Load reads the configuration: each setting of the table in settings.go,
// then the rules between settings. The error names every variable at fault,
// on one line.
func Load(getenv Getenv) (Config, error) {
	c := Config{Quotas: map[string]int64{}}
	var errs []error
	for _, s := range settings {
		err := s.value.parse(&c, s.raw(getenv))
		var want wantError
		if errors.As(err, &want) && s.Default != "" {
			err = fmt.Errorf("%w, such as %s", err, s.Default)
		}
		if err != nil {
			errs = append(errs, badSetting(s.Name, "%v", err))
		}
	}
	// The rules between settings would only repeat an error about one of them.
	if len(errs) == 0 {
		for _, rule := range rules {
			if err := rule(&c); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := joinOneLine(errs); err != nil {
		return Config{}, err
	}
	return c, nil
}

// rules are the checks and derived defaults that involve more than one
// setting, in order: a derived default comes before what derives from it.
var rules = []func(*Config) error{
	defaultDatabaseURL,
	defaultBaseURL,
	defaultSMTPHostname,
	defaultMXHost,
	inflightFitsAMessage,
	tlsCertWithKey,
	implicitTLSHasACertificate,
	acmeSettings,
	dkimKeysPaired,
	twilioCredentials,
	telnyxSettings,
	mailProviderSettings,
	snsCertNeedsTopics,
	previousKeysNeedAKey,
	oidcClient,
	retryMaxAtLeastRetry,
}

// badSetting is an error naming the variable at fault.
func badSetting(name, format string, args ...any) error {
	return fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...))
}

func defaultDatabaseURL(c *Config) error {
	if c.DatabaseURL != "" {
		return nil
	}
	c.DatabaseURL = filepath.Join(c.DataDir, "callsign.db")
	if msg := checkDatabaseURL(c.DatabaseURL); msg != "" {
		return badSetting("CALLSIGN_DATABASE_URL", "%s (from CALLSIGN_DATA_DIR)", msg)
	}
	return nil
}

func defaultBaseURL(c *Config) error {
	if c.BaseURL != "" {
		return nil
	}
	c.BaseURL = "http://" + c.HTTPAddr
	if err := checkBaseURL(c.BaseURL); err != nil {
		return badSetting("CALLSIGN_BASE_URL", "%v (from CALLSIGN_HTTP_ADDR)", err)
	}
	return nil
}

// defaultSMTPHostname takes the host of the base URL. An IP address becomes
// an address literal (RFC 5321 §4.1.3), since a bare IP is no valid EHLO
// argument.
func defaultSMTPHostname(c *Config) error {
	if c.SMTPHostname != "" {
		return nil
	}
	c.SMTPHostname = "localhost"
	if u, err := url.Parse(c.BaseURL); err == nil && u.Hostname() != "" {
		c.SMTPHostname = addressLiteral(u.Hostname())
	}
	return nil
}

// defaultMXHost takes our SMTP name when that is a host name. It stays ""
// when all we know is an address (the default base URL's 127.0.0.1): an MX
// record names a host, never an address, so custom domains are told what
// to set instead.
func defaultMXHost(c *Config) error {
	if c.MXHost == "" && !strings.HasPrefix(c.SMTPHostname, "[") {
		c.MXHost = c.SMTPHostname
	}
	return nil
}

// A message of the largest size must fit, or its sender would retry forever.
func inflightFitsAMessage(c *Config) error {
	if c.SMTPMaxInflightBytes < c.SMTPMaxBytes {
		return badSetting("CALLSIGN_SMTP_MAX_INFLIGHT_BYTES", "want a size such as 256MiB, at least CALLSIGN_SMTP_MAX_BYTES")
	}
	return nil
}

func tlsCertWithKey(c *Config) error {
	if (c.SMTPTLSCert == "") != (c.SMTPTLSKey == "") {
		return badSetting("CALLSIGN_SMTP_TLS_CERT", "set both CALLSIGN_SMTP_TLS_CERT and CALLSIGN_SMTP_TLS_KEY, or neither")
	}
	return nil
}

func implicitTLSHasACertificate(c *Config) error {
	if c.IMAPSAddr != "" && c.SMTPTLSCert == "" && !c.ACME {
		return badSetting("CALLSIGN_IMAPS_ADDR", "implicit TLS needs a certificate: set CALLSIGN_SMTP_TLS_CERT and CALLSIGN_SMTP_TLS_KEY")
	}
	return nil
}

// LetsEncryptDirectory is Let's Encrypt's production ACME directory.
const LetsEncryptDirectory = "https://acme-v02.api.letsencrypt.org/directory"

// acmeSettings checks what certificates by ACME need: a contact, a place
// to serve HTTPS, and host names to ask certificates for (a CA issues none
// for an IP address or for localhost).
func acmeSettings(c *Config) error {
	if !c.ACME {
		if c.HTTPSAddr != "" {
			return badSetting("CALLSIGN_HTTPS_ADDR", "HTTPS is served with certificates by ACME: set CALLSIGN_ACME=on, or unset CALLSIGN_HTTPS_ADDR")
		}
		return nil
	}
	switch {
	case c.SMTPTLSCert != "":
		return badSetting("CALLSIGN_ACME", "certificates come either from ACME or from CALLSIGN_SMTP_TLS_CERT: unset one")
	case c.ACMEEmail == "":
		return badSetting("CALLSIGN_ACME_EMAIL", "set the ACME account's contact address (CALLSIGN_ACME=on)")
	case c.HTTPSAddr == "":
		return badSetting("CALLSIGN_HTTPS_ADDR", "set where HTTPS listens, e.g. 0.0.0.0:443 (CALLSIGN_ACME=on)")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || u.Scheme != "https" || !isCertificateName(u.Hostname()) {
		return badSetting("CALLSIGN_BASE_URL", "want https://<host name> with CALLSIGN_ACME=on, not %q", c.BaseURL)
	}
	if c.MXHost != "" && !isCertificateName(c.MXHost) {
		return badSetting("CALLSIGN_MX_HOST", "want a public host name with CALLSIGN_ACME=on, not %q", c.MXHost)
	}
	return nil
}

// isCertificateName reports whether a CA could issue a certificate for
// host: a domain name with a dot, no address and no localhost.
func isCertificateName(host string) bool {
	return net.ParseIP(host) == nil && isDomainName(host) && strings.Contains(host, ".") &&
		host != "localhost" && !strings.HasSuffix(host, ".localhost")
}

// dkimKeysPaired checks the key files and selectors, which the two settings
// put in PlatformDKIM in order, pair up.
func dkimKeysPaired(c *Config) error {
	var files, selectors int
	for _, k := range c.PlatformDKIM {
		if k.Path != "" {
			files++
		}
		if k.Selector != "" {
			selectors++
		}
	}
	switch {
	case files != selectors:
		return badSetting("CALLSIGN_DKIM_KEY_FILE", "name one selector per key file in CALLSIGN_DKIM_SELECTOR, in the same order (%d files, %d selectors)", files, selectors)
	case files > MaxPlatformDKIMKeys:
		return badSetting("CALLSIGN_DKIM_KEY_FILE", "at most %d keys (an RSA and an Ed25519 one), not %d", MaxPlatformDKIMKeys, files)
	}
	for i := 1; i < len(c.PlatformDKIM); i++ {
		if s := c.PlatformDKIM[i].Selector; s == c.PlatformDKIM[0].Selector {
			return badSetting("CALLSIGN_DKIM_SELECTOR", "each key needs its own selector: %q is named twice", s)
		}
	}
	return nil
}

func twilioCredentials(c *Config) error {
	if c.Telephony != "twilio" {
		return nil
	}
	var missing []error
	if c.TwilioAccountSID == "" {
		missing = append(missing, badSetting("TWILIO_ACCOUNT_SID", "required when CALLSIGN_TELEPHONY=twilio"))
	}
	if c.TwilioAuthToken == "" {
		missing = append(missing, badSetting("TWILIO_AUTH_TOKEN", "required when CALLSIGN_TELEPHONY=twilio"))
	}
	return joinOneLine(missing)
}

// telnyxSettings requires what the Telnyx adapter needs.
func telnyxSettings(c *Config) error {
	if c.Telephony != "telnyx" {
		return nil
	}
	var missing []error
	for _, s := range []struct{ name, value string }{{"TELNYX_API_KEY", c.TelnyxAPIKey}, {"TELNYX_PUBLIC_KEY", c.TelnyxPublicKey},
		{"TELNYX_MESSAGING_PROFILE_ID", c.TelnyxMessagingProfileID}, {"TELNYX_CONNECTION_ID", c.TelnyxConnectionID}} {
		if s.value == "" {
			missing = append(missing, badSetting(s.name, "required when CALLSIGN_TELEPHONY=telnyx"))
		}
	}
	return joinOneLine(missing)
}

// mailProviderSettings requires what the chosen mail provider needs.
func mailProviderSettings(c *Config) error {
	switch {
	case c.MailProvider == "ses" && c.SESRegion == "":
		return badSetting("CALLSIGN_SES_REGION", "required when CALLSIGN_MAIL_PROVIDER=ses (e.g. eu-west-1)")
	case c.MailProvider == "mailgun" && c.MailgunAPIKey == "":
		return badSetting("CALLSIGN_MAILGUN_API_KEY", "required when CALLSIGN_MAIL_PROVIDER=mailgun")
	}
	return nil
}

// snsCertNeedsTopics: a pinned SNS certificate says SES is meant to post
// here, which it cannot without a topic to accept.
func snsCertNeedsTopics(c *Config) error {
	if c.SNSCertFile != "" && len(c.SNSTopicARNs) == 0 {
		return badSetting("CALLSIGN_SNS_TOPIC_ARNS", "required with CALLSIGN_SNS_CERT_FILE (the SNS topics whose messages are accepted)")
	}
	return nil
}

func previousKeysNeedAKey(c *Config) error {
	if len(c.VaultPreviousKeys) > 0 && c.VaultKey == nil {
		return badSetting("CALLSIGN_VAULT_PREVIOUS_KEYS", "only meaningful with CALLSIGN_VAULT_KEY")
	}
	return nil
}

func oidcClient(c *Config) error {
	if c.OIDCIssuer != "" && c.OIDCClientID == "" {
		return badSetting("CALLSIGN_OIDC_CLIENT_ID", "required with CALLSIGN_OIDC_ISSUER")
	}
	return nil
}

func retryMaxAtLeastRetry(c *Config) error {
	if c.OutboxRetryMax < c.OutboxRetry {
		return badSetting("CALLSIGN_OUTBOX_RETRY_MAX", "shorter than CALLSIGN_OUTBOX_RETRY (%v)", c.OutboxRetry)
	}
	return nil
}

// joinOneLine joins errors as Load reports them; nil when there are none.
func joinOneLine(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
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

// checkBaseURL accepts an absolute http(s) URL without a query.
func checkBaseURL(s string) error {
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

// checkSMTPHostname reads a configured SMTP name: a domain name, or an
// address literal (RFC 5321 §4.1.3), since a bare IP is no valid EHLO
// argument.
func checkSMTPHostname(configured string) (string, error) {
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

// checkMXHost reads a configured MX host: a name, never an address.
func checkMXHost(configured string) (string, error) {
	name := strings.TrimSuffix(strings.ToLower(configured), ".")
	if !isDomainName(name) || net.ParseIP(name) != nil {
		return "", fmt.Errorf("%q is not a host name (an MX record names a host, never an address)", configured)
	}
	return name, nil
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
