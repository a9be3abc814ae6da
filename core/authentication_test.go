package core

import (
	"net"
	"strings"
	"testing"
)

// testOrganization stands in for the public suffix list: the last two labels.
func testOrganization(domain string) string {
	labels := strings.Split(domain, ".")
	if len(labels) <= 2 {
		return domain
	}
	return strings.Join(labels[len(labels)-2:], ".")
}

func TestAuthenticate(t *testing.T) {
	reject := DMARCLookup{Result: AuthPass, Policy: DMARCReject}
	cases := []struct {
		name                string
		e                   AuthEvidence
		spf, dkim, dmarc, v AuthResult
		policy              DMARCPolicy
	}{
		{"aligned dkim", AuthEvidence{SPF: AuthNone, SPFDomain: "bounce.other.example", FromDomain: "bank.example",
			Signatures: []DKIMOutcome{{Result: AuthPass, Domain: "bank.example"}}, DMARC: reject},
			AuthNone, AuthPass, AuthPass, AuthPass, DMARCReject},
		{"aligned spf, relaxed", AuthEvidence{SPF: AuthPass, SPFDomain: "mail.bank.example", FromDomain: "bank.example", DMARC: reject},
			AuthPass, AuthNone, AuthPass, AuthPass, DMARCReject},
		{"spf of a subdomain under strict alignment", AuthEvidence{SPF: AuthPass, SPFDomain: "mail.bank.example", FromDomain: "bank.example",
			DMARC: DMARCLookup{Result: AuthPass, Policy: DMARCReject, StrictSPF: true}},
			AuthPass, AuthNone, AuthFail, AuthFail, DMARCReject},
		{"forged: spf passes for the forger's domain, no signature", AuthEvidence{SPF: AuthPass, SPFDomain: "forger.example", FromDomain: "bank.example", DMARC: reject},
			AuthPass, AuthNone, AuthFail, AuthFail, DMARCReject},
		{"forged: a signature of another domain", AuthEvidence{SPF: AuthFail, SPFDomain: "bank.example", FromDomain: "bank.example",
			Signatures: []DKIMOutcome{{Result: AuthPass, Domain: "forger.example"}, {Result: AuthFail, Domain: "bank.example"}}, DMARC: reject},
			AuthFail, AuthPass, AuthFail, AuthFail, DMARCReject},
		{"dns trouble is temperror, not fail", AuthEvidence{SPF: AuthTempError, SPFDomain: "bank.example", FromDomain: "bank.example",
			Signatures: []DKIMOutcome{{Result: AuthTempError, Domain: "bank.example"}}, DMARC: reject},
			AuthTempError, AuthTempError, AuthTempError, AuthNone, DMARCReject},
		{"dmarc lookup failed", AuthEvidence{SPF: AuthPass, SPFDomain: "bank.example", FromDomain: "bank.example", DMARC: DMARCLookup{Result: AuthTempError}},
			AuthPass, AuthNone, AuthTempError, AuthNone, ""},
		{"no dmarc, aligned spf", AuthEvidence{SPF: AuthPass, SPFDomain: "shop.example", FromDomain: "shop.example", DMARC: DMARCLookup{Result: AuthNone}},
			AuthPass, AuthNone, AuthNone, AuthPass, ""},
		{"no dmarc, unaligned dkim", AuthEvidence{SPF: AuthNone, FromDomain: "shop.example",
			Signatures: []DKIMOutcome{{Result: AuthPass, Domain: "esp.example"}}, DMARC: DMARCLookup{Result: AuthNone}},
			AuthNone, AuthPass, AuthNone, AuthNone, ""},
		{"no dmarc, hard spf fail", AuthEvidence{SPF: AuthFail, SPFDomain: "shop.example", FromDomain: "shop.example", DMARC: DMARCLookup{Result: AuthNone}},
			AuthFail, AuthNone, AuthNone, AuthFail, ""},
		{"no dmarc, spf fail but dkim pass", AuthEvidence{SPF: AuthFail, SPFDomain: "shop.example", FromDomain: "shop.example",
			Signatures: []DKIMOutcome{{Result: AuthPass, Domain: "esp.example"}}, DMARC: DMARCLookup{Result: AuthNone}},
			AuthFail, AuthPass, AuthNone, AuthNone, ""},
		{"no dmarc, softfail", AuthEvidence{SPF: AuthSoftFail, SPFDomain: "shop.example", FromDomain: "shop.example", DMARC: DMARCLookup{Result: AuthNone}},
			AuthSoftFail, AuthNone, AuthNone, AuthNone, ""},
		{"subdomain policy from the organization's record", AuthEvidence{SPF: AuthNone, FromDomain: "news.bank.example",
			DMARC: DMARCLookup{Result: AuthPass, Policy: DMARCNone, SubdomainPolicy: DMARCReject, AtOrganization: true}},
			AuthNone, AuthNone, AuthFail, AuthFail, DMARCReject},
		{"no from domain", AuthEvidence{SPF: AuthPass, SPFDomain: "shop.example", DMARC: DMARCLookup{Result: AuthNone}},
			AuthPass, AuthNone, AuthPermError, AuthNone, ""},
	}
	for _, c := range cases {
		a := Authenticate(c.e, testOrganization)
		if a.SPF != c.spf || a.DKIM != c.dkim || a.DMARC != c.dmarc || a.Verdict != c.v || a.Policy != c.policy {
			t.Errorf("%s: spf=%s dkim=%s dmarc=%s verdict=%s policy=%q; want %s %s %s %s %q",
				c.name, a.SPF, a.DKIM, a.DMARC, a.Verdict, a.Policy, c.spf, c.dkim, c.dmarc, c.v, c.policy)
		}
	}
}

func TestInboundAuthChecks(t *testing.T) {
	loop, remote := net.ParseIP("127.0.0.2"), net.ParseIP("192.0.2.7")
	for _, c := range []struct {
		mode         InboundAuth
		loop, remote bool
	}{{InboundAuthOn, false, true}, {InboundAuthAll, true, true}, {InboundAuthOff, false, false}} {
		if c.mode.Checks(loop) != c.loop || c.mode.Checks(remote) != c.remote {
			t.Errorf("%s: loopback %v, remote %v", c.mode, c.mode.Checks(loop), c.mode.Checks(remote))
		}
	}
}
