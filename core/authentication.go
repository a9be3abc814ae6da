package core

import (
	"net"
)

// AuthResult is an RFC 8601 result word.
type AuthResult string

const (
	AuthPass      AuthResult = "pass"
	AuthFail      AuthResult = "fail"
	AuthSoftFail  AuthResult = "softfail"
	AuthNeutral   AuthResult = "neutral"
	AuthNone      AuthResult = "none"
	AuthTempError AuthResult = "temperror"
	AuthPermError AuthResult = "permerror"
)

// ParseAuthResult accepts the result words a verdict can hold.
func ParseAuthResult(s string) (AuthResult, bool) {
	switch r := AuthResult(s); r {
	case AuthPass, AuthFail, AuthSoftFail, AuthNeutral, AuthNone, AuthTempError, AuthPermError:
		return r, true
	}
	return "", false
}

// DMARCPolicy is what a domain asks receivers to do with mail that fails.
type DMARCPolicy string

const (
	DMARCNone       DMARCPolicy = "none"
	DMARCQuarantine DMARCPolicy = "quarantine"
	DMARCReject     DMARCPolicy = "reject"
)

// Authentication is what the checks of an inbound message found.
type Authentication struct {
	SPF   AuthResult
	DKIM  AuthResult
	DMARC AuthResult
	// Verdict sums them up: pass, fail or none.
	Verdict AuthResult
	// Policy is the From domain's DMARC policy ("" without one). A message
	// that fails under "reject" is kept, and this says it was asked not to be.
	Policy DMARCPolicy
	// What was checked, for the Authentication-Results field.
	SPFDomain  string // the MAIL FROM domain, or the HELO name for a null sender
	SPFByHELO  bool   // SPFDomain is the HELO name (RFC 8601 §2.7.2: smtp.helo)
	FromDomain string
	Signatures []DKIMOutcome
	// Checked says the checks ran; Unchecked has not.
	Checked bool
	// Local marks mail that never crossed SMTP: sent by one of our own
	// identities to another, authenticated by its API key.
	Local bool
	// CheckedBy names who reached these results when it was not us: the
	// mail provider that received the message ("ses", "mailgun"), whose
	// verdicts we keep since we never saw the sending server. "" is us.
	CheckedBy string
}

// ProviderAuthentication is the authentication of mail a provider
// received for us, from its SPF, DKIM and DMARC results: we cannot see
// how they align, so only the provider's DMARC decides the verdict
// (pass or fail); without one (Mailgun gives none) it is none.
func ProviderAuthentication(spf, dkim, dmarc AuthResult) Authentication {
	a := Authentication{SPF: spf, DKIM: dkim, DMARC: dmarc, Verdict: AuthNone, Checked: true}
	if dmarc == AuthPass || dmarc == AuthFail {
		a.Verdict = dmarc
	}
	return a
}

// CheckedByUs is how the API names our own checks.
const CheckedByUs = "callsign"

// DKIMOutcome is one signature's result and signing domain (d=).
type DKIMOutcome struct {
	Result AuthResult
	Domain string
}

// DMARCLookup is what the DMARC record lookup found (RFC 7489 §6.6.3: at
// the From domain, else at its organizational domain).
type DMARCLookup struct {
	// Result is AuthPass when a record was found, AuthNone when none exists,
	// AuthTempError or AuthPermError (a record that does not parse).
	Result          AuthResult
	Policy          DMARCPolicy
	SubdomainPolicy DMARCPolicy // "" when the record has no sp=
	StrictSPF       bool        // aspf=s
	StrictDKIM      bool        // adkim=s
	// AtOrganization says the record is the organizational domain's.
	AtOrganization bool
}

// AuthEvidence is what the lookups found about a message.
type AuthEvidence struct {
	SPF        AuthResult
	SPFDomain  string
	SPFByHELO  bool   // SPFDomain is the HELO name: the null sender's (RFC 7208 §2.4)
	FromDomain string // the single From address's domain; "" when there is none or several
	Signatures []DKIMOutcome
	DMARC      DMARCLookup
}

// Authenticate turns evidence into results and a verdict. organization
// gives a domain's organizational domain (the public suffix list's
// registrable domain), which relaxed alignment compares.
//
// DMARC passes when SPF or a DKIM signature passes for a domain aligned
// with From; when neither does and a check failed for want of an answer,
// it is a temperror, not a fail. The verdict is pass on a DMARC pass, or,
// when the From domain publishes no DMARC policy, on an aligned SPF or
// DKIM pass; fail on a DMARC fail, or on a hard SPF fail without a DKIM
// pass; none otherwise.
func Authenticate(e AuthEvidence, organization func(string) string) Authentication {
	a := Authentication{Checked: true, SPF: e.SPF, DKIM: combineDKIM(e.Signatures), SPFDomain: e.SPFDomain, SPFByHELO: e.SPFByHELO, FromDomain: e.FromDomain, Signatures: e.Signatures}
	aligned := func(strict bool, domain string) bool {
		domain, from := NormalizeDomain(domain), NormalizeDomain(e.FromDomain)
		if domain == "" || from == "" {
			return false
		}
		return domain == from || !strict && organization(domain) == organization(from)
	}
	spfAligned := func(strict bool) bool { return e.SPF == AuthPass && aligned(strict, e.SPFDomain) }
	dkimAligned := func(strict bool) (pass, tempError bool) {
		for _, s := range e.Signatures {
			if aligned(strict, s.Domain) {
				pass = pass || s.Result == AuthPass
				tempError = tempError || s.Result == AuthTempError
			}
		}
		return pass, tempError
	}

	switch {
	case e.FromDomain == "":
		a.DMARC = AuthPermError // no single author domain to check
	case e.DMARC.Result != AuthPass:
		a.DMARC = e.DMARC.Result
	default:
		a.Policy = e.DMARC.Policy
		if e.DMARC.AtOrganization && e.DMARC.SubdomainPolicy != "" && NormalizeDomain(e.FromDomain) != organization(e.FromDomain) {
			a.Policy = e.DMARC.SubdomainPolicy
		}
		dkimPass, dkimTemp := dkimAligned(e.DMARC.StrictDKIM)
		switch {
		case spfAligned(e.DMARC.StrictSPF) || dkimPass:
			a.DMARC = AuthPass
		case e.SPF == AuthTempError || dkimTemp:
			a.DMARC = AuthTempError
		default:
			a.DMARC = AuthFail
		}
	}

	relaxedDKIMPass, _ := dkimAligned(false)
	switch {
	case a.DMARC == AuthPass, a.DMARC == AuthNone && (spfAligned(false) || relaxedDKIMPass):
		a.Verdict = AuthPass
	case a.DMARC == AuthFail, e.SPF == AuthFail && a.DKIM != AuthPass:
		a.Verdict = AuthFail
	default:
		a.Verdict = AuthNone
	}
	return a
}

// combineDKIM is the message's DKIM result: pass when a signature passes;
// otherwise the most telling failure; none without signatures.
func combineDKIM(sigs []DKIMOutcome) AuthResult {
	best := AuthNone
	rank := map[AuthResult]int{AuthNone: 0, AuthPermError: 1, AuthFail: 2, AuthTempError: 3, AuthPass: 4}
	for _, s := range sigs {
		if rank[s.Result] > rank[best] {
			best = s.Result
		}
	}
	return best
}

// Unchecked is the authentication of a message nobody looked at.
var Unchecked = Authentication{SPF: AuthNone, DKIM: AuthNone, DMARC: AuthNone, Verdict: AuthNone}

// LocalAuthentication is the authentication of mail between two of our
// own identities: no SMTP, no DNS, but the sender proved who it is with
// its API key, so the verdict is pass.
var LocalAuthentication = Authentication{SPF: AuthNone, DKIM: AuthNone, DMARC: AuthNone, Verdict: AuthPass, Local: true}

// InboundAuth says which inbound connections are checked
// (CALLSIGN_INBOUND_AUTH).
type InboundAuth string

const (
	// InboundAuthOn checks every connection but loopback ones, so local
	// tools keep working offline.
	InboundAuthOn InboundAuth = "on"
	// InboundAuthAll checks loopback too (tests, with a DNS server they start).
	InboundAuthAll InboundAuth = "all"
	// InboundAuthOff checks nothing and records no verdict.
	InboundAuthOff InboundAuth = "off"
)

// Checks reports whether mail from ip is checked; a loopback connection
// under "on" is not, and gets Unchecked.
func (m InboundAuth) Checks(ip net.IP) bool {
	switch m {
	case InboundAuthAll:
		return true
	case InboundAuthOn:
		return ip != nil && !ip.IsLoopback()
	}
	return false
}
