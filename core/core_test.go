package core

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMintKeyAndParse(t *testing.T) {
	for _, kt := range []KeyType{KeyManagement, KeyIdentity} {
		k, err := MintKey(kt, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := ParseKeyType(k.Secret)
		if !ok || got != kt {
			t.Fatalf("%s: parsed %q as %v %v", kt, k.Secret, got, ok)
		}
		if !strings.HasPrefix(k.Secret, k.Record.Prefix) || len(k.Record.Prefix) >= len(k.Secret)-32 {
			t.Fatalf("prefix %q of %q shows too much", k.Record.Prefix, k.Secret)
		}
		if !KeyMatches(k.Secret, k.Record.Hash) || KeyMatches(k.Secret+"x", k.Record.Hash) {
			t.Fatal("hash comparison")
		}
		if bytes.Contains(k.Record.Hash, []byte(k.Secret)) {
			t.Fatal("the hash holds the key")
		}
	}
	for _, bad := range []string{"", "svc_mgmt_", "svc_mgmt_short", "svc_id_" + strings.Repeat("a", 31), "Bearer svc_mgmt_" + strings.Repeat("a", 40), "svc_mgmt_" + strings.Repeat("-", 40)} {
		if _, ok := ParseKeyType(bad); ok {
			t.Errorf("%q parsed as a key", bad)
		}
	}
}

func TestRandomStringIsUnbiasedAlphabet(t *testing.T) {
	s, err := RandomString(rand.Reader, 5000, "abc")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[rune]int{}
	for _, r := range s {
		counts[r]++
	}
	for _, r := range "abc" {
		if counts[r] < 1400 || counts[r] > 1930 {
			t.Fatalf("skewed: %v", counts)
		}
	}
	if len(counts) != 3 {
		t.Fatalf("outside the alphabet: %v", counts)
	}
}

func TestScope(t *testing.T) {
	mgmt := Principal{AccountID: "A", KeyType: KeyManagement}
	idk := Principal{AccountID: "A", KeyType: KeyIdentity, IdentityID: "I1"}
	for _, tc := range []struct {
		name      string
		p         Principal
		requested string
		want      Scope
	}{
		{"management, account-wide", mgmt, "", Scope{AccountID: "A"}},
		{"management narrows", mgmt, "I2", Scope{AccountID: "A", IdentityID: "I2"}},
		{"identity key, implicit", idk, "", Scope{AccountID: "A", IdentityID: "I1"}},
		{"identity key, its own", idk, "I1", Scope{AccountID: "A", IdentityID: "I1"}},
		{"identity key, another: empty", idk, "I2", Scope{AccountID: "A", IdentityID: "I1", Empty: true}},
	} {
		if got := tc.p.Scope(tc.requested); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	s := idk.Scope("")
	if !s.Allows("A", "I1") || s.Allows("A", "I2") || s.Allows("B", "I1") {
		t.Error("identity scope allows the wrong objects")
	}
	if idk.Scope("I2").Allows("A", "I1") {
		t.Error("an empty scope allows an object")
	}
	if !mgmt.Scope("").Allows("A", "anything") || mgmt.Scope("").Allows("B", "x") {
		t.Error("management scope")
	}
	if _, err := mgmt.Scope("").Single("identity"); KindOf(err) != KindInvalid {
		t.Errorf("management without identity: %v", err)
	}
	if id, err := idk.Scope("").Single("identity"); err != nil || id != "I1" {
		t.Errorf("identity key single: %v %v", id, err)
	}
	if _, err := idk.Scope("I2").Single("identity"); KindOf(err) != KindNotFound {
		t.Errorf("identity key naming another: %v", err)
	}
}

func TestAddresses(t *testing.T) {
	for in, want := range map[string]string{"Sales": "sales", " a.b+c_d-e ": "a.b+c_d-e"} {
		if got, err := NormalizeLocalPart("f", in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "a b", ".a", "a.", "a..b", "ünï", strings.Repeat("a", 65), "a@b"} {
		if _, err := NormalizeLocalPart("f", bad); KindOf(err) != KindInvalid {
			t.Errorf("%q accepted", bad)
		}
	}
	for in, want := range map[string]string{"Bob@Example.COM": "Bob@example.com", "a@localhost": "a@localhost"} {
		if got, err := NormalizeEmail("f", in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "bob", "bob@", "@x.com", "Bob <bob@x.com>", "a@b.com\r\nBcc: x@y.com", "a@b.com,c@d.com", "a@nodot"} {
		if _, err := NormalizeEmail("f", bad); KindOf(err) != KindInvalid {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestNormalizeMailbox(t *testing.T) {
	for in, want := range map[string][2]string{
		"Bob@Example.COM":                      {"", "Bob@example.com"},
		"Bob Example <bob@Example.com>":        {"Bob Example", "bob@example.com"},
		`"Example, Bob" <bob@example.com>`:     {"Example, Bob", "bob@example.com"},
		"=?utf-8?q?Zo=C3=AB?= <z@example.com>": {"Zoë", "z@example.com"},
	} {
		name, addr, err := NormalizeMailbox("to", in)
		if err != nil || name != want[0] || addr != want[1] {
			t.Errorf("%q: %q %q %v", in, name, addr, err)
		}
	}
	for _, bad := range []string{"Bob <bob>", "Bob <a@b.com>, Eve <e@b.com>", "Bob\r\nBcc: x <a@b.com>", "<>", "Bob <bob@x.com"} {
		if _, _, err := NormalizeMailbox("to", bad); KindOf(err) != KindInvalid {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestGenerateIdentityName(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		n, err := GenerateIdentityName(rand.Reader)
		if err != nil || ValidateIdentityName(n) != nil || strings.Count(n, "-") != 2 {
			t.Fatalf("%q %v", n, err)
		}
		seen[n] = true
	}
	if len(seen) < 45 {
		t.Fatalf("names repeat too often: %d distinct of 50", len(seen))
	}
}

func TestProblemsCollectEveryField(t *testing.T) {
	var p Problems
	if p.Err() != nil {
		t.Fatal("empty problems are an error")
	}
	p.Add("a", "bad %d", 1)
	p.Merge(Invalid("b", "worse"))
	if p.Merge(NotFound("x")) {
		t.Fatal("merged a non-validation error")
	}
	e := p.Err().(*Error)
	if e.Kind != KindInvalid || e.Fields["a"][0] != "bad 1" || e.Fields["b"][0] != "worse" || e.Error() != "a: bad 1; b: worse" {
		t.Fatalf("%+v", e)
	}
}

func TestDomainHost(t *testing.T) {
	for in, want := range map[string]string{
		"github.com":                       "github.com",
		"https://GitHub.com/login?next=/x": "github.com",
		"http://user@Example.org:8443/":    "example.org",
		"Sub.Example.org.":                 "sub.example.org",
		"  mail.example.com  ":             "mail.example.com",
		"":                                 "",
	} {
		if got := DomainHost(in); got != want {
			t.Errorf("DomainHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPreview(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "",
		"  Hello,\r\n\r\n  world  ": "Hello, world",
		strings.Repeat("ab ", 100):  strings.TrimSpace(strings.Repeat("ab ", 67)),
		strings.Repeat("é", 300):    strings.Repeat("é", PreviewLength),
	} {
		if got := Preview(in); got != want || len([]rune(got)) > PreviewLength {
			t.Errorf("Preview(%.20q) = %q, want %q", in, got, want)
		}
	}
}

func TestSMSStatusFollows(t *testing.T) {
	for _, tc := range []struct {
		current, next SMSStatus
		want          bool
	}{
		{SMSQueued, SMSSent, true}, {SMSSent, SMSDelivered, true}, {SMSQueued, SMSFailed, true}, {SMSSent, SMSSent, true},
		{SMSSent, SMSQueued, false}, {SMSDelivered, SMSSent, false},
		{SMSDelivered, SMSUndelivered, false}, {SMSUndelivered, SMSDelivered, false}, {SMSFailed, SMSDelivered, false},
		{SMSReceived, SMSDelivered, false},
	} {
		if got := SMSStatusFollows(tc.current, tc.next); got != tc.want {
			t.Errorf("%s after %s: %v, want %v", tc.next, tc.current, got, tc.want)
		}
	}
}

func TestKeptSMSMedia(t *testing.T) {
	var many []SMSMedia
	for range 12 {
		many = append(many, SMSMedia{URL: "https://m.example/x", ContentType: "image/png"})
	}
	if got := KeptSMSMedia(many); len(got) != MaxSMSMedia {
		t.Errorf("kept %d", len(got))
	}
	got := KeptSMSMedia([]SMSMedia{{URL: "ftp://m.example/x"}, {URL: "https://m.example/y", ContentType: "a\r\nb"}})
	if len(got) != 1 || got[0].ContentType != "application/octet-stream" {
		t.Errorf("kept %+v", got)
	}
}

func TestGeneratedLocalPart(t *testing.T) {
	for name, want := range map[string]string{
		"helper":                  "helper",
		"Sales Bot 2":             "sales-bot-2",
		"  --Zoë's  assistant--":  "zo-s-assistant",
		"!!!":                     "agent",
		"":                        "agent",
		strings.Repeat("ab ", 30): strings.Repeat("ab-", 13) + "a", // at most 40 characters
	} {
		if got, err := GeneratedLocalPart(name, 0, rand.Reader); err != nil || got != want {
			t.Errorf("GeneratedLocalPart(%q, 0) = %q %v, want %q", name, got, err, want)
		}
	}
	got, err := GeneratedLocalPart("Sales Bot", 1, rand.Reader)
	if err != nil || !strings.HasPrefix(got, "sales-bot-") || len(got) != len("sales-bot-xxxx") {
		t.Fatalf("a later attempt: %q %v", got, err)
	}
	if _, err := NormalizeLocalPart("email_identifier", got); err != nil {
		t.Fatalf("%q is not a valid local part: %v", got, err)
	}
}

func TestBoundBodies(t *testing.T) {
	m := EmailMessage{Text: "a" + strings.Repeat("é", MaxStoredBody), HTML: "<p>short</p>"}
	m.BoundBodies()
	if len(m.Text) != MaxStoredBody-1 || !utf8.ValidString(m.Text) || m.HTML != "<p>short</p>" || !m.Truncated {
		t.Fatalf("%d bytes, valid %v, html %q, truncated %v", len(m.Text), utf8.ValidString(m.Text), m.HTML, m.Truncated)
	}
	small := EmailMessage{Text: "hi", HTML: "<b>hi</b>"}
	small.BoundBodies()
	if small.Truncated || small.Text != "hi" {
		t.Fatalf("%+v", small)
	}
	if s := StoredSMSBody(strings.Repeat("€", MaxStoredSMSBody)); len(s) > MaxStoredSMSBody || !utf8.ValidString(s) {
		t.Fatalf("sms body %d bytes", len(s))
	}
}

func TestShownInline(t *testing.T) {
	html := `<p><img src="CID:Logo@Example.org"></p>`
	for _, tc := range []struct {
		html, cid string
		inline    bool
		want      bool
	}{
		{html, "logo@example.org", false, true}, // referenced: inline whatever the disposition
		{html, "other@example.org", true, true}, // marked inline
		{html, "other@example.org", false, false},
		{html, "", true, false}, // nothing can refer to it
		{"", "logo@example.org", true, false},
	} {
		if got := ShownInline(tc.html, tc.cid, tc.inline); got != tc.want {
			t.Errorf("ShownInline(%q, %q, %v) = %v", tc.html, tc.cid, tc.inline, got)
		}
	}
}

func TestParseSMSStatusTelnyxWords(t *testing.T) {
	for word, want := range map[string]SMSStatus{
		"queued": SMSQueued, "sending": SMSSent, "sent": SMSSent, "delivery_unconfirmed": SMSSent, "delivered": SMSDelivered,
		"sending_failed": SMSFailed, "gw_timeout": SMSFailed, "delivery_failed": SMSUndelivered, "expired": SMSUndelivered,
		"dlr_timeout": SMSUndelivered,
	} {
		if got, ok := ParseSMSStatus(word); !ok || got != want {
			t.Errorf("ParseSMSStatus(%q) = %q, %v; want %q", word, got, ok, want)
		}
	}
}
