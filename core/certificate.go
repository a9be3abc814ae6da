package core

import (
	"strings"
	"time"
)

// Certificates by ACME: which names the service asks a certificate
// authority for, and who among several instances may ask.

// CertificateHost reads a name a TLS client asked for (its SNI): allowed
// when it is one of fixed (the base URL's host, the MX host); else, for
// mta-sts.<domain>, the custom domain whose MTA-STS host it is, which the
// caller must check receives mail here. Anything else is refused, so a
// stranger's SNI never makes us ask the CA (and spend its rate limits).
func CertificateHost(host string, fixed []string) (mtaSTSDomain string, allowed bool) {
	host = NormalizeDomain(host)
	for _, f := range fixed {
		if f != "" && host == NormalizeDomain(f) {
			return "", true
		}
	}
	if d, ok := strings.CutPrefix(host, MTASTSPolicyHost("")); ok && d != "" {
		return d, false
	}
	return "", false
}

// CertificateLease is how long one instance may talk to the CA for a name
// before another may: longer than an order takes (challenges included), and
// short, as instances without it wait for it in TLS handshakes.
const CertificateLease = 2 * time.Minute

// LeaseFree reports whether holder may take a lease now: it holds it
// already, or the lease ran out.
func LeaseFree(heldBy, holder string, until, now time.Time) bool {
	return heldBy == holder || !until.After(now)
}
