package ports

import (
	"context"
	"net"

	"github.com/callsign/callsign/core"
)

// InboundOrigin is what an SMTP session knows of where a message came from.
type InboundOrigin struct {
	IP       net.IP
	HELO     string
	MailFrom string // "" for the null sender
}

// MailAuthenticator checks inbound mail: SPF for the connection, DKIM
// signatures and DMARC for the From domain, through the DNS.
type MailAuthenticator interface {
	// Authenticate checks raw, the message as its sender sent it. DNS
	// failures give temperror results, never an error: a message is
	// never held back by the DNS.
	Authenticate(ctx context.Context, origin InboundOrigin, raw []byte) core.Authentication
	// ResultsField is the Authentication-Results header field (RFC 8601)
	// saying a, with its line end, to go on top of the stored message.
	ResultsField(a core.Authentication) []byte
	// Organization is a domain's registrable domain under the public
	// suffix list; ok is false when domain is itself a public suffix.
	Organization(domain string) (org string, ok bool)
}

// DKIMKeyPair is a new signing key: its public half and its private half
// (PKCS #8 DER), which the caller seals before storing.
type DKIMKeyPair struct {
	Public  core.DKIMKey
	Private []byte
}

// DKIMSigner makes keys and signs outgoing mail (RFC 6376).
type DKIMSigner interface {
	// NewKey makes a key pair for selector.
	NewKey(selector string) (DKIMKeyPair, error)
	// Sign signs raw for domain with the private key (PKCS #8 DER) and
	// returns the message with its DKIM-Signature field on top.
	Sign(raw []byte, domain, selector string, private []byte) ([]byte, error)
}
