package core

import (
	"net"
	"strings"
	"time"
	"unicode/utf8"
)

// SourceTLS is how a connection to a mail source is secured.
type SourceTLS string

const (
	SourceImplicitTLS SourceTLS = "implicit" // TLS from the first byte (IMAPS, port 993)
	SourceStartTLS    SourceTLS = "starttls" // plaintext, upgraded with STARTTLS before login
	SourcePlain       SourceTLS = "plain"    // no TLS: loopback hosts only
)

// DefaultSourceFolder is the folder a source reads when none is named.
const DefaultSourceFolder = "INBOX"

// MailSource is an existing mailbox that feeds one of our inboxes over IMAP.
// Password is plaintext here; stores only ever see it sealed.
type MailSource struct {
	ID         string // the inbox's uuid: an inbox has at most one source
	AccountID  string
	IdentityID string
	InboxID    int64
	Host       string
	Port       int
	Username   string
	Password   string
	TLS        SourceTLS
	Folder     string
	Progress   SourceProgress
	CreatedAt  time.Time
	// UpdatedAt changes with every change of the settings; it tells a
	// worker whether the settings it runs with are still the current ones.
	UpdatedAt time.Time
}

// SourceProgress is how far a source's worker has come and how it fares.
type SourceProgress struct {
	// UIDValidity and LastUID are the cursor: every message of the folder
	// with a UID up to LastUID under this UIDVALIDITY has been delivered.
	UIDValidity uint32
	LastUID     uint32
	Connected   bool
	LastError   string
	LastSyncAt  *time.Time
}

// Why a source's last connection failed, as last_error shows it: a
// category, never the remote's words, so that a source cannot be used to
// learn what answers at an address (open ports, banners).
const (
	SourceErrorDNS      = "dns"      // the host does not resolve
	SourceErrorConnect  = "connect"  // no connection (refused, unreachable, or an address the server does not connect to)
	SourceErrorTLS      = "tls"      // the TLS handshake or STARTTLS failed
	SourceErrorAuth     = "auth"     // the server refused the user name and password
	SourceErrorProtocol = "protocol" // the server did not speak IMAP as expected (or the folder is missing)
	SourceErrorTimeout  = "timeout"  // the server did not answer in time
	SourceErrorInternal = "internal" // storing what was pulled failed on our side
	SourceErrorQuota    = "quota"    // the account is at its storage quota: pulling waits for room
)

// Limits on source settings.
const (
	maxSourceHostLength   = 255
	maxSourceFolderLength = 255
	MaxSourcePasswordLen  = 4096
)

// DefaultSourcePort is the IMAP port for a way of securing the connection.
func DefaultSourcePort(t SourceTLS) int {
	if t == SourceImplicitTLS {
		return 993
	}
	return 143
}

// IsLoopbackHost reports whether host names this machine without a lookup:
// a "localhost" name or a loopback address in any notation (HostIP).
func IsLoopbackHost(host string) bool {
	ip, ok := HostIP(host)
	return ok && ClassifyDestination(ip) == DestinationLoopback
}

// ValidateMailSource checks the settings a caller gives a source, naming
// every field at fault. A password travels in the clear only to this machine.
func ValidateMailSource(s MailSource) error {
	var p Problems
	switch {
	case s.Host == "":
		p.Add("host", "This field is required.")
	case len(s.Host) > maxSourceHostLength || strings.ContainsAny(s.Host, " \t\r\n/@") ||
		strings.Contains(s.Host, ":") && net.ParseIP(s.Host) == nil:
		p.Add("host", "Enter a host name or IP address.")
	}
	if s.Port < 1 || s.Port > 65535 {
		p.Add("port", "Ensure this value is between 1 and 65535.")
	}
	switch {
	case s.Username == "":
		p.Add("username", "This field is required.")
	case utf8.RuneCountInString(s.Username) > MaxUsernameLength || HasLineBreak(s.Username):
		p.Add("username", "Enter a user name of at most %d characters on one line.", MaxUsernameLength)
	}
	switch {
	case s.Password == "":
		p.Add("password", "This field is required.")
	case len(s.Password) > MaxSourcePasswordLen || HasLineBreak(s.Password):
		p.Add("password", "Enter a password of at most %d characters on one line.", MaxSourcePasswordLen)
	}
	switch s.TLS {
	case SourceImplicitTLS, SourceStartTLS:
	case SourcePlain:
		if !IsLoopbackHost(s.Host) {
			p.Add("tls", "plain sends the password unencrypted, so it is allowed only for a loopback host; use implicit or starttls.")
		}
	default:
		p.Add("tls", "%q is not a valid choice; use implicit, starttls or plain.", s.TLS)
	}
	switch {
	case s.Folder == "":
		p.Add("folder", "This field may not be blank.")
	case utf8.RuneCountInString(s.Folder) > maxSourceFolderLength || strings.ContainsAny(s.Folder, "\r\n\x00"):
		p.Add("folder", "Enter a folder name of at most %d characters on one line.", maxSourceFolderLength)
	}
	return p.Err()
}

// SameMailbox reports whether two settings read the same folder of the same
// account, so that a cursor kept for one holds for the other.
func (s MailSource) SameMailbox(o MailSource) bool {
	return strings.EqualFold(s.Host, o.Host) && s.Port == o.Port && s.Username == o.Username && s.Folder == o.Folder
}
