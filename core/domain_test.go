package core

import (
	"strings"
	"testing"
	"time"
)

func TestNormalizeDomainName(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM.":          "example.com",
		" mail.example.co.uk ":  "mail.example.co.uk",
		"xn--bcher-kva.example": "xn--bcher-kva.example",
		"a-b.c1.io":             "a-b.c1.io",
	} {
		if got, err := NormalizeDomainName("name", in); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "com", "example..com", "-a.example", "a-.example", "exa_mple.com",
		"192.0.2.1", "bücher.example", "a b.example", strings.Repeat("a", 64) + ".com",
		strings.Repeat("abcdefghi.", 26) + "com"} {
		if _, err := NormalizeDomainName("name", bad); err == nil || KindOf(err) != KindInvalid {
			t.Errorf("%q accepted (%v)", bad, err)
		}
	}
}

func TestRecordStatusRules(t *testing.T) {
	cases := []struct {
		name string
		got  RecordStatus
		want RecordStatus
	}{
		{"mx ours", MXStatus([]string{"backup.example.", "MX.Callsign.Test."}, "mx.callsign.test"), RecordOK},
		{"mx theirs", MXStatus([]string{"aspmx.l.google.com."}, "mx.callsign.test"), RecordMismatch},
		{"mx none", MXStatus(nil, "mx.callsign.test"), RecordMissing},
		{"spf mx", SPFStatus([]string{"google-site-verification=x", "v=spf1 mx ~all"}, ""), RecordOK},
		{"spf include", SPFStatus([]string{"v=spf1 +include:Relay.Example -all"}, "relay.example"), RecordOK},
		{"spf without us", SPFStatus([]string{"v=spf1 mx -all"}, "relay.example"), RecordMismatch},
		{"spf twice", SPFStatus([]string{"v=spf1 mx ~all", "v=spf1 mx -all"}, ""), RecordMismatch},
		{"spf none", SPFStatus([]string{"v=spf10 mx", "hello"}, ""), RecordMissing},
		{"dkim ours", DKIMStatus([]string{"v=DKIM1; k=rsa; p=MIIB Ajan"}, "MIIBAjan"), RecordOK},
		{"dkim other", DKIMStatus([]string{"v=DKIM1; p=other"}, "MIIBAjan"), RecordMismatch},
		{"dkim none", DKIMStatus(nil, "MIIBAjan"), RecordMissing},
		{"dmarc ok", DMARCStatus([]string{"v=DMARC1; p=reject; rua=mailto:x@example.com"}), RecordOK},
		{"dmarc bad policy", DMARCStatus([]string{"v=DMARC1; p=maybe"}), RecordMismatch},
		{"dmarc twice", DMARCStatus([]string{"v=DMARC1; p=none", "v=DMARC1; p=reject"}), RecordMismatch},
		{"dmarc none", DMARCStatus([]string{"v=spf1 -all"}), RecordMissing},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %s, want %s", c.name, c.got, c.want)
		}
	}
}

var testSettings = DomainSettings{MXHost: "mx.callsign.test", SPFInclude: "spf.relay.test"}

func newTestDomain(created time.Time) Domain {
	return Domain{Name: "acme.example", Type: DomainCustom, Status: DomainPending, CreatedAt: created, NextCheckAt: created,
		Keys: []DKIMKey{{Selector: "cs1", Algorithm: "rsa", PublicKey: "KEYONE", Active: true, CreatedAt: created}}}
}

func published(keys ...string) DomainAnswers {
	a := DomainAnswers{
		MX:    Lookup{Values: []string{"mx.callsign.test."}},
		TXT:   Lookup{Values: []string{"v=spf1 mx include:spf.relay.test ~all"}},
		DMARC: Lookup{Values: []string{DMARCRecordValue}},
		DKIM:  map[string]Lookup{},
	}
	for i := 0; i < len(keys); i += 2 {
		a.DKIM[keys[i]] = Lookup{Values: []string{"v=DKIM1; k=rsa; p=" + keys[i+1]}}
	}
	return a
}

func TestRecordsToPublish(t *testing.T) {
	created := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	d := newTestDomain(created)
	recs := d.Records(testSettings)
	policy, _ := d.MTASTSPolicy(testSettings)
	want := []DNSRecord{
		{Purpose: PurposeMX, Type: "MX", Name: "acme.example", Value: "mx.callsign.test", Priority: 10, Status: RecordMissing},
		{Purpose: PurposeSPF, Type: "TXT", Name: "acme.example", Value: "v=spf1 mx include:spf.relay.test ~all", Status: RecordMissing},
		{Purpose: PurposeDKIM, Selector: "cs1", Type: "TXT", Name: "cs1._domainkey.acme.example", Value: "v=DKIM1; k=rsa; p=KEYONE", Status: RecordMissing},
		{Purpose: PurposeDMARC, Type: "TXT", Name: "_dmarc.acme.example", Value: "v=DMARC1; p=quarantine; adkim=r; aspf=r", Status: RecordMissing},
		{Purpose: PurposeMTASTS, Type: "TXT", Name: "_mta-sts.acme.example", Value: "v=STSv1; id=" + MTASTSPolicyID(policy), Status: RecordMissing},
	}
	if len(recs) != len(want) {
		t.Fatalf("records = %+v", recs)
	}
	for i := range want {
		if recs[i] != want[i] {
			t.Errorf("record %d = %+v, want %+v", i, recs[i], want[i])
		}
	}
	if v := SPFRecordValue(DomainSettings{MXHost: "mx.callsign.test"}); v != "v=spf1 mx ~all" {
		t.Errorf("SPF without include = %q", v)
	}
}

// Knowing no host name of its own, the service suggests no MX record (one
// naming an address is no MX record) and says what to set instead.
func TestNoMXHost(t *testing.T) {
	created := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	noMX := DomainSettings{SPFInclude: "spf.relay.test"}
	d := newTestDomain(created)
	for _, r := range d.Records(noMX) {
		if r.Type == "MX" || r.Purpose == PurposeMX {
			t.Errorf("an MX record without an MX host: %+v", r)
		}
	}
	if n := len(d.Records(noMX)); n != 3 {
		t.Errorf("%d records, want SPF, DKIM and DMARC", n)
	}
	if r := noMX.UncheckedReason(); !strings.Contains(r, "CALLSIGN_MX_HOST") {
		t.Errorf("new domain's reason %q", r)
	}
	if r := testSettings.UncheckedReason(); strings.Contains(r, "MX") {
		t.Errorf("new domain's reason with an MX host %q", r)
	}
	// Everything else published, an MX somewhere: still not verified.
	c := d.Check(published("cs1", "KEYONE"), noMX, created.Add(time.Minute))
	if c.Verified || c.Domain.Status != DomainPending || !strings.Contains(c.Domain.Reason, "CALLSIGN_MX_HOST") ||
		strings.Contains(c.Domain.Reason, "DKIM") || c.Domain.Checks[PurposeDKIM] != RecordOK {
		t.Errorf("checked: %+v", c.Domain)
	}
}

func TestDomainLifecycle(t *testing.T) {
	created := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	d := newTestDomain(created)

	// Nothing published: pending, with the reason, looked at again soon.
	now := created.Add(time.Minute)
	c := d.Check(DomainAnswers{MX: Lookup{Missing: true}, TXT: Lookup{Missing: true}, DMARC: Lookup{Missing: true}, DKIM: map[string]Lookup{"cs1": {Missing: true}}}, testSettings, now)
	d = c.Domain
	if d.Status != DomainPending || c.Verified || !strings.Contains(d.Reason, "MX record of acme.example is missing") || !strings.Contains(d.Reason, "cs1._domainkey.acme.example") {
		t.Fatalf("unpublished: %+v", d)
	}
	if d.NextCheckAt != now.Add(DomainCheckEarly) || d.LastCheckedAt != now {
		t.Errorf("unpublished: next check %v", d.NextCheckAt)
	}

	// SPF and DMARC missing do not hold verification back.
	a := published("cs1", "KEYONE")
	a.TXT, a.DMARC = Lookup{Missing: true}, Lookup{Missing: true}
	now = now.Add(time.Hour)
	c = d.Check(a, testSettings, now)
	d = c.Domain
	if d.Status != DomainVerified || !c.Verified || d.Reason != "" || d.VerifiedAt != now || d.NextCheckAt != now.Add(DomainCheckVerified) {
		t.Fatalf("published: %+v", c)
	}
	if d.Checks[PurposeSPF] != RecordMissing || d.Checks[PurposeMX] != RecordOK {
		t.Errorf("checks = %v", d.Checks)
	}

	// A DNS failure changes nothing, and the next look comes sooner.
	now = now.Add(24 * time.Hour)
	c = d.Check(DomainAnswers{MX: Lookup{Failed: true}, TXT: Lookup{Failed: true}, DMARC: Lookup{Failed: true}, DKIM: map[string]Lookup{"cs1": {Failed: true}}}, testSettings, now)
	if c.Domain.Status != DomainVerified || c.Verified || c.Domain.Checks[PurposeMX] != RecordOK || c.Domain.NextCheckAt != now.Add(DomainCheckEarly) {
		t.Fatalf("failed lookups: %+v", c.Domain)
	}

	// The DKIM record taken away: failed, saying so; put back: verified.
	a = published("cs1", "SOMETHINGELSE")
	c = d.Check(a, testSettings, now)
	if c.Domain.Status != DomainFailed || !strings.Contains(c.Domain.Reason, "does not hold our key") || c.Domain.VerifiedAt != d.VerifiedAt || c.Domain.NextCheckAt != now.Add(DomainCheckLate) {
		t.Fatalf("record changed: %+v", c.Domain)
	}
	c = c.Domain.Check(published("cs1", "KEYONE"), testSettings, now.Add(time.Hour))
	if c.Domain.Status != DomainVerified || !c.Verified {
		t.Fatalf("record back: %+v", c.Domain)
	}

	// A pending domain past its first day is looked at hourly.
	late := newTestDomain(created)
	c = late.Check(published(), testSettings, created.Add(25*time.Hour))
	if c.Domain.Status != DomainPending || c.Domain.NextCheckAt != created.Add(26*time.Hour) {
		t.Errorf("late pending: %+v", c.Domain)
	}
}

func TestKeyRotation(t *testing.T) {
	created := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	d := newTestDomain(created).Check(published("cs1", "KEYONE"), testSettings, created).Domain
	rotated := created.Add(48 * time.Hour)
	d.Keys = append(d.Keys, DKIMKey{Selector: "cs2", Algorithm: "rsa", PublicKey: "KEYTWO", CreatedAt: rotated})

	recs := d.Records(testSettings)
	if len(recs) != 6 || recs[3].Selector != "cs2" || recs[3].Status != RecordMissing || recs[2].Status != RecordOK {
		t.Fatalf("records during rotation = %+v", recs)
	}
	// The new record not yet published: the old key keeps signing.
	c := d.Check(published("cs1", "KEYONE"), testSettings, rotated.Add(time.Minute))
	if c.Retired != "" || len(c.Domain.Keys) != 2 || c.Domain.NextCheckAt != rotated.Add(time.Minute+DomainCheckEarly) {
		t.Fatalf("before publishing: %+v", c)
	}
	// Published: the new key signs, the old one goes.
	a := published("cs1", "KEYONE", "cs2", "KEYTWO")
	c = c.Domain.Check(a, testSettings, rotated.Add(time.Hour))
	k, _ := c.Domain.ActiveKey()
	if c.Retired != "cs1" || len(c.Domain.Keys) != 1 || k.Selector != "cs2" || c.Domain.Status != DomainVerified || c.Verified {
		t.Fatalf("after publishing: %+v", c)
	}
	recs = c.Domain.Records(testSettings)
	if len(recs) != 5 || recs[2].Name != "cs2._domainkey.acme.example" || recs[2].Status != RecordOK {
		t.Errorf("records after rotation = %+v", recs)
	}
}

func TestTagList(t *testing.T) {
	tags := TagList(" v=DKIM1 ;K=rsa; p= MIIB ; p=second; junk; =x")
	if tags["v"] != "DKIM1" || tags["k"] != "rsa" || tags["p"] != "MIIB" || len(tags) != 3 {
		t.Errorf("tags = %v", tags)
	}
}

func TestMTASTSRules(t *testing.T) {
	s := DomainSettings{MXHost: "MX.Callsign.Example."}
	d := Domain{Name: "acme.example"}
	testing_, ok := d.MTASTSPolicy(s)
	if !ok || testing_ != "version: STSv1\r\nmode: testing\r\nmx: mx.callsign.example\r\nmax_age: 604800\r\n" {
		t.Fatalf("policy %q", testing_)
	}
	d.MTASTSMode = MTASTSEnforce
	enforce, _ := d.MTASTSPolicy(s)
	id := MTASTSPolicyID(enforce)
	if id == MTASTSPolicyID(testing_) || len(id) > 32 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Fatalf("ids %s %s", id, MTASTSPolicyID(testing_))
	}
	if _, ok := d.MTASTSPolicy(DomainSettings{}); ok {
		t.Fatal("a policy without an MX host")
	}
	for _, c := range []struct {
		txts []string
		want RecordStatus
	}{
		{nil, RecordMissing},
		{[]string{"v=spf1 mx -all"}, RecordMissing},
		{[]string{"v=STSv1; id=" + id}, RecordOK},
		{[]string{"v=STSv1;id=" + id + ";"}, RecordOK},
		{[]string{"v=STSv1; id=old"}, RecordMismatch},
		{[]string{"v=STSv1; id=" + id, "v=STSv1; id=" + id}, RecordMismatch}, // two are none (RFC 8461 §3.1)
	} {
		if got := MTASTSStatus(c.txts, id); got != c.want {
			t.Errorf("MTASTSStatus(%q) = %s, want %s", c.txts, got, c.want)
		}
	}
	for _, c := range []struct {
		txts []string
		want RecordStatus
	}{
		{nil, RecordMissing},
		{[]string{"v=TLSRPTv1; rua=mailto:tls@ops.example"}, RecordOK},
		{[]string{"v=TLSRPTv1; rua=https://r.example/tls, mailto:TLS@ops.example"}, RecordOK},
		{[]string{"v=TLSRPTv1; rua=mailto:else@ops.example"}, RecordMismatch},
	} {
		if got := TLSRPTStatus(c.txts, "tls@ops.example"); got != c.want {
			t.Errorf("TLSRPTStatus(%q) = %s, want %s", c.txts, got, c.want)
		}
	}
	if _, err := ParseMTASTSMode("mode", "none"); err == nil {
		t.Error("mode none accepted")
	}
}
