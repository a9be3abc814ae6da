package core

import (
	"fmt"
	"strings"
	"time"
)

// Domain is a mail domain an account may use for inboxes: a platform
// domain (every account's) or an account's own, verified through the DNS.
type Domain struct {
	Name   string
	Type   DomainType
	Status DomainStatus
	// The rest concerns custom domains only.
	AccountID string
	// Reason says why a custom domain is not verified; "" when it is.
	Reason string
	// Keys are the domain's DKIM keys: the one that signs, and during a
	// rotation the next one, waiting for its record to be published.
	Keys []DKIMKey
	// Checks is the status of each record at the last look ("" before any).
	Checks map[RecordPurpose]RecordStatus
	// MTASTSMode is the mode of the MTA-STS policy we serve for it.
	MTASTSMode    MTASTSMode
	CreatedAt     time.Time
	VerifiedAt    time.Time // zero until first verified
	LastCheckedAt time.Time // zero until first checked
	NextCheckAt   time.Time
}

type DomainType string

const (
	DomainPlatform DomainType = "platform" // served for every account (CALLSIGN_MAIL_DOMAINS)
	DomainCustom   DomainType = "custom"   // an account's own domain
)

type DomainStatus string

const (
	DomainPending  DomainStatus = "pending"  // never verified yet
	DomainVerified DomainStatus = "verified" // MX and DKIM records are ours
	DomainFailed   DomainStatus = "failed"   // was verified; a record went away
)

// ReceivesMail reports whether mail for a custom domain is taken: once
// verified, also after a record went away (failed), so that its inboxes
// lose nothing while the owner puts the record back.
func (d Domain) ReceivesMail() bool { return d.Status == DomainVerified || d.Status == DomainFailed }

// TakesNewInboxes reports whether an account may put a new inbox on its
// custom domain: only while it is verified.
func (d Domain) TakesNewInboxes(accountID string) bool {
	return d.Status == DomainVerified && d.AccountID == accountID
}

// DKIMKey is the public half of a domain's signing key; the private half
// is kept sealed beside it by the store and never leaves the service.
type DKIMKey struct {
	Selector string
	// Algorithm is the k= tag: "rsa" or "ed25519".
	Algorithm string
	// PublicKey is the p= tag: base64 of the key (RSA: its DER
	// SubjectPublicKeyInfo; Ed25519: its 32 bytes).
	PublicKey string
	// Active marks the key that signs; a key that is not active waits for
	// its record to verify (a rotation).
	Active    bool
	CreatedAt time.Time
}

// RecordPurpose says what a DNS record is for.
type RecordPurpose string

const (
	PurposeMX    RecordPurpose = "mx"
	PurposeSPF   RecordPurpose = "spf"
	PurposeDKIM  RecordPurpose = "dkim" // the active key's; a pending key's is "dkim:<selector>"
	PurposeDMARC RecordPurpose = "dmarc"
)

// pendingDKIM is the purpose of a rotation's new key record.
func pendingDKIM(selector string) RecordPurpose { return PurposeDKIM + RecordPurpose(":"+selector) }

// RecordStatus is what a check found for one record.
type RecordStatus string

const (
	RecordOK       RecordStatus = "ok"
	RecordMissing  RecordStatus = "missing"  // no such record
	RecordMismatch RecordStatus = "mismatch" // a record is there but not ours
)

// DNSRecord is one record an account is asked to publish.
type DNSRecord struct {
	Purpose  RecordPurpose
	Selector string // DKIM records: the key's selector
	Type     string // "MX" or "TXT"
	Name     string
	Value    string
	Priority int // MX only
	Status   RecordStatus
}

// DomainSettings are the service's side of a custom domain's records.
type DomainSettings struct {
	// MXHost is the host the domain's MX must point at (CALLSIGN_MX_HOST);
	// "" when the service knows no host name of its own, only an address.
	MXHost string
	// SPFInclude, when set, is the domain whose SPF policy authorizes our
	// outbound relay (CALLSIGN_SPF_INCLUDE).
	SPFInclude string
	// TLSReportsTo, when set, is the address senders' TLS reports go to
	// (CALLSIGN_TLS_REPORTS_TO): each domain is asked for a TLSRPT record.
	TLSReportsTo string
}

// NoMXHost is why a domain cannot be verified while the service knows no
// host name of its own: an MX record names a host, never an address (RFC
// 5321 §5.1), so none is suggested, and the owner's operator must set one.
const NoMXHost = "no MX record can be suggested, since this service knows no host name of its own (only an IP address): " +
	"its operator must set CALLSIGN_MX_HOST (or CALLSIGN_SMTP_HOSTNAME) to the name its SMTP listener is reached at"

// UncheckedReason is a new domain's reason, before its first check.
func (s DomainSettings) UncheckedReason() string {
	if s.MXHost == "" {
		return "The records are not checked yet; " + NoMXHost + "."
	}
	return "The records are not checked yet."
}

// MXPriority is the preference asked for our MX record.
const MXPriority = 10

// MaxDomainNameLength is the DNS's limit on a name, without the final dot.
const MaxDomainNameLength = 253

// NormalizeDomainName checks a domain name an account wants as its own:
// letters, digits and hyphens in labels of 1-63 characters, at least two
// labels, a top-level label that is not a number (so no IP address), ASCII
// only (internationalized names in their xn-- form). It returns the name
// lower-cased without a final dot. Whether the name is registrable (not a
// public suffix such as co.uk) needs the public suffix list, which the
// caller checks.
func NormalizeDomainName(field, name string) (string, error) {
	name = NormalizeDomain(name)
	if name == "" {
		return "", Invalid(field, "This field may not be blank.")
	}
	for _, r := range name {
		if r > 0x7f {
			return "", Invalid(field, "Enter an internationalized name in its ASCII form (xn--…).")
		}
	}
	labels := strings.Split(name, ".")
	if len(name) > MaxDomainNameLength || len(labels) < 2 {
		return "", Invalid(field, "Enter a domain name such as example.com.")
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return "", Invalid(field, "Enter a domain name such as example.com: labels of letters, digits and inner hyphens, up to 63 characters each.")
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "", Invalid(field, "Enter a domain name, not an address.")
	}
	return name, nil
}

// DKIMRecordName is where a key's public half is published.
func DKIMRecordName(selector, domain string) string { return selector + "._domainkey." + domain }

// DMARCRecordName is where a domain's DMARC policy is published.
func DMARCRecordName(domain string) string { return "_dmarc." + domain }

// DKIMRecordValue is the TXT record of a key (RFC 6376 §3.6.1).
func DKIMRecordValue(k DKIMKey) string {
	return "v=DKIM1; k=" + k.Algorithm + "; p=" + k.PublicKey
}

// SPFRecordValue authorizes our MX host and, when set, the relay's SPF
// include. "~all" rather than "-all": the domain may have other senders
// the account has yet to list, and DMARC is what receivers enforce.
func SPFRecordValue(s DomainSettings) string {
	v := "v=spf1 mx"
	if s.SPFInclude != "" {
		v += " include:" + s.SPFInclude
	}
	return v + " ~all"
}

// DMARCRecordValue asks receivers to quarantine mail that fails DMARC.
// Everything we send is DKIM-signed by the domain, so ours passes.
const DMARCRecordValue = "v=DMARC1; p=quarantine; adkim=r; aspf=r"

// Records lists what the domain's owner must publish, each with its status
// at the last check: MX (none without an MX host: see NoMXHost), SPF, the
// signing key's DKIM record (and the next key's during a rotation), DMARC,
// and, with an MX host, MTA-STS, and TLS reporting when an address is set.
// MTA-STS and TLS reporting are advice: they never decide verification.
func (d Domain) Records(s DomainSettings) []DNSRecord {
	status := func(p RecordPurpose) RecordStatus {
		if st := d.Checks[p]; st != "" {
			return st
		}
		return RecordMissing // nothing found yet: not checked
	}
	var out []DNSRecord
	if s.MXHost != "" {
		out = append(out, DNSRecord{Purpose: PurposeMX, Type: "MX", Name: d.Name, Value: NormalizeDomain(s.MXHost), Priority: MXPriority, Status: status(PurposeMX)})
	}
	out = append(out, DNSRecord{Purpose: PurposeSPF, Type: "TXT", Name: d.Name, Value: SPFRecordValue(s), Status: status(PurposeSPF)})
	for _, k := range d.Keys {
		purpose := PurposeDKIM
		if !k.Active {
			purpose = pendingDKIM(k.Selector)
		}
		out = append(out, DNSRecord{Purpose: PurposeDKIM, Selector: k.Selector, Type: "TXT",
			Name: DKIMRecordName(k.Selector, d.Name), Value: DKIMRecordValue(k), Status: status(purpose)})
	}
	out = append(out, DNSRecord{Purpose: PurposeDMARC, Type: "TXT", Name: DMARCRecordName(d.Name), Value: DMARCRecordValue, Status: status(PurposeDMARC)})
	if policy, ok := d.MTASTSPolicy(s); ok {
		out = append(out, DNSRecord{Purpose: PurposeMTASTS, Type: "TXT", Name: MTASTSRecordName(d.Name), Value: MTASTSRecordValue(policy), Status: status(PurposeMTASTS)})
	}
	if s.TLSReportsTo != "" {
		out = append(out, DNSRecord{Purpose: PurposeTLSRPT, Type: "TXT", Name: TLSRPTRecordName(d.Name), Value: TLSRPTRecordValue(s.TLSReportsTo), Status: status(PurposeTLSRPT)})
	}
	return out
}

// ActiveKey is the key that signs; ok is false for a domain without keys.
func (d Domain) ActiveKey() (DKIMKey, bool) {
	for _, k := range d.Keys {
		if k.Active {
			return k, true
		}
	}
	return DKIMKey{}, false
}

// PendingKey is a rotation's next key, waiting for its record.
func (d Domain) PendingKey() (DKIMKey, bool) {
	for _, k := range d.Keys {
		if !k.Active {
			return k, true
		}
	}
	return DKIMKey{}, false
}

// Lookup is what one DNS question found: the values, that there are none
// (Missing), or no answer (Failed: a timeout, a failing server).
type Lookup struct {
	Values  []string
	Missing bool
	Failed  bool
}

// DomainAnswers are the DNS answers a check needs.
type DomainAnswers struct {
	MX     Lookup // hosts
	TXT    Lookup // the domain's own TXT records (SPF)
	DMARC  Lookup
	DKIM   map[string]Lookup // by selector
	MTASTS Lookup            // _mta-sts TXT
	TLSRPT Lookup            // _smtp._tls TXT
}

// DomainCheck is the outcome of a check.
type DomainCheck struct {
	Domain Domain
	// Verified says the domain has just become verified (from pending or failed).
	Verified bool
	// Retired is the selector of a key the check replaced ("" for none):
	// the next key's record verified, so it signs from now on.
	Retired string
}

// Check applies a look at the DNS: each record's status, the domain's
// status (verified while its MX and signing key's records are ours), a
// rotation's end, and when to look again. A lookup that got no answer
// changes nothing it would have decided: a flaky resolver never fails a
// domain.
func (d Domain) Check(a DomainAnswers, s DomainSettings, now time.Time) DomainCheck {
	checks := make(map[RecordPurpose]RecordStatus, len(d.Checks)+2)
	for p, st := range d.Checks {
		checks[p] = st
	}
	failed := false
	apply := func(p RecordPurpose, l Lookup, rule func([]string) RecordStatus) {
		switch {
		case l.Failed:
			failed = true
		case l.Missing:
			checks[p] = RecordMissing
		default:
			checks[p] = rule(l.Values)
		}
	}
	if s.MXHost != "" {
		apply(PurposeMX, a.MX, func(v []string) RecordStatus { return MXStatus(v, s.MXHost) })
	}
	apply(PurposeSPF, a.TXT, func(v []string) RecordStatus { return SPFStatus(v, s.SPFInclude) })
	apply(PurposeDMARC, a.DMARC, DMARCStatus)
	if policy, ok := d.MTASTSPolicy(s); ok {
		apply(PurposeMTASTS, a.MTASTS, func(v []string) RecordStatus { return MTASTSStatus(v, MTASTSPolicyID(policy)) })
	}
	if s.TLSReportsTo != "" {
		apply(PurposeTLSRPT, a.TLSRPT, func(v []string) RecordStatus { return TLSRPTStatus(v, s.TLSReportsTo) })
	}
	out := DomainCheck{Domain: d}
	var keys []DKIMKey
	for _, k := range d.Keys {
		purpose := PurposeDKIM
		if !k.Active {
			purpose = pendingDKIM(k.Selector)
		}
		apply(purpose, a.DKIM[k.Selector], func(v []string) RecordStatus { return DKIMStatus(v, k.PublicKey) })
		keys = append(keys, k)
	}
	// A rotation ends when the next key's record is ours: it signs, the old
	// key goes, and the record keeps its status under the active purpose.
	if next, ok := d.PendingKey(); ok && checks[pendingDKIM(next.Selector)] == RecordOK {
		old, _ := d.ActiveKey()
		out.Retired = old.Selector
		keys = []DKIMKey{{Selector: next.Selector, Algorithm: next.Algorithm, PublicKey: next.PublicKey, Active: true, CreatedAt: next.CreatedAt}}
		checks[PurposeDKIM] = RecordOK
		delete(checks, pendingDKIM(next.Selector))
	}
	d.Keys, d.Checks, d.LastCheckedAt = keys, checks, now

	var problems []string
	if s.MXHost == "" {
		problems = append(problems, NoMXHost)
	} else if st := checks[PurposeMX]; st != RecordOK {
		problems = append(problems, fmt.Sprintf("the MX record of %s %s", d.Name, statusWords(st, "does not point at "+NormalizeDomain(s.MXHost))))
	}
	if st := checks[PurposeDKIM]; st != RecordOK {
		problems = append(problems, fmt.Sprintf("the DKIM record at %s %s", d.dkimName(), statusWords(st, "does not hold our key")))
	}
	switch {
	case len(problems) == 0:
		out.Verified = d.Status != DomainVerified
		d.Status, d.Reason = DomainVerified, ""
		if out.Verified {
			d.VerifiedAt = now
		}
	case failed:
		// No definite answer: the status stands; say why it is not verified.
		if d.Status != DomainVerified {
			d.Reason = "DNS lookups failed for now; the records are checked again soon."
		}
	default:
		if d.Status == DomainVerified {
			d.Status = DomainFailed
		}
		d.Reason = upperFirst(strings.Join(problems, "; ")) + "."
	}
	d.NextCheckAt = d.nextCheck(now, failed)
	out.Domain = d
	return out
}

func (d Domain) dkimName() string {
	if k, ok := d.ActiveKey(); ok {
		return DKIMRecordName(k.Selector, d.Name)
	}
	return DKIMRecordName("*", d.Name)
}

func statusWords(st RecordStatus, mismatch string) string {
	if st == RecordMismatch {
		return mismatch
	}
	return "is missing"
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// How often domains are looked at again: a new domain (and a new key)
// often for its first day, while its owner publishes the records, then
// hourly; a verified domain daily, to notice a record taken away.
const (
	DomainCheckEarly    = 5 * time.Minute
	DomainCheckLate     = time.Hour
	DomainCheckVerified = 24 * time.Hour
	DomainEarlyPeriod   = 24 * time.Hour
)

func (d Domain) nextCheck(now time.Time, failed bool) time.Time {
	since := d.CreatedAt
	if next, ok := d.PendingKey(); ok {
		since = next.CreatedAt
	}
	every := DomainCheckLate
	switch {
	case failed || now.Sub(since) < DomainEarlyPeriod && (d.Status == DomainPending || d.hasPendingKey()):
		every = DomainCheckEarly
	case d.Status == DomainVerified && !d.hasPendingKey():
		every = DomainCheckVerified
	}
	return now.Add(every)
}

func (d Domain) hasPendingKey() bool {
	_, ok := d.PendingKey()
	return ok
}

// MXStatus: ok when one of the hosts is ours.
func MXStatus(hosts []string, mxHost string) RecordStatus {
	if len(hosts) == 0 {
		return RecordMissing
	}
	for _, h := range hosts {
		if NormalizeDomain(h) == NormalizeDomain(mxHost) {
			return RecordOK
		}
	}
	return RecordMismatch
}

// SPFStatus: ok when the domain has one SPF policy (RFC 7208 §4.5: two
// are an error) and it authorizes us: the include when one is configured,
// else the "mx" mechanism.
func SPFStatus(txts []string, include string) RecordStatus {
	var policies []string
	for _, t := range txts {
		if terms := strings.Fields(t); len(terms) > 0 && strings.EqualFold(terms[0], "v=spf1") {
			policies = append(policies, t)
		}
	}
	switch len(policies) {
	case 0:
		return RecordMissing
	case 1:
	default:
		return RecordMismatch
	}
	want := "mx"
	if include != "" {
		want = "include:" + NormalizeDomain(include)
	}
	for _, term := range strings.Fields(policies[0])[1:] {
		if strings.EqualFold(strings.TrimPrefix(term, "+"), want) {
			return RecordOK
		}
	}
	return RecordMismatch
}

// DKIMStatus: ok when a record at the key's name carries the key.
func DKIMStatus(txts []string, publicKey string) RecordStatus {
	if len(txts) == 0 {
		return RecordMissing
	}
	for _, t := range txts {
		if tags := TagList(t); strings.Join(strings.Fields(tags["p"]), "") == publicKey {
			return RecordOK
		}
	}
	return RecordMismatch
}

// DMARCStatus: ok when the domain has one DMARC policy with a valid p=.
func DMARCStatus(txts []string) RecordStatus {
	var policies []map[string]string
	for _, t := range txts {
		if tags := TagList(t); tags["v"] == "DMARC1" {
			policies = append(policies, tags)
		}
	}
	if len(policies) == 0 {
		return RecordMissing
	}
	if len(policies) == 1 {
		switch policies[0]["p"] {
		case "none", "quarantine", "reject":
			return RecordOK
		}
	}
	return RecordMismatch
}

// TagList reads a DKIM or DMARC tag list ("v=DKIM1; k=rsa; p=…"): names
// are trimmed and lower-cased, values trimmed; a repeated tag keeps its
// first value.
func TagList(s string) map[string]string {
	tags := map[string]string{}
	for _, part := range strings.Split(s, ";") {
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		name = strings.ToLower(strings.TrimSpace(name))
		if _, seen := tags[name]; !seen && name != "" {
			tags[name] = strings.TrimSpace(value)
		}
	}
	return tags
}
