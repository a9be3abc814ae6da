package core

import (
	"crypto/rand"
	"strings"
	"testing"
)

func TestBounceAddress(t *testing.T) {
	token, err := NewBounceToken(rand.Reader)
	if err != nil || len(token) != BounceTokenLength {
		t.Fatalf("token %q, %v", token, err)
	}
	addr := BounceAddress(token, "acme.example")
	for _, seen := range []string{addr, strings.ToUpper(addr), " " + addr} {
		if got, ok := ParseBounceAddress(seen); !ok || got != token {
			t.Errorf("ParseBounceAddress(%q) = %q, %v", seen, got, ok)
		}
	}
	for _, other := range []string{"ada@acme.example", "bounces+@acme.example", "bounces+" + token + "x@acme.example",
		"bounces+" + strings.Repeat("1", BounceTokenLength) + "@acme.example", "bounces-" + token + "@acme.example", "bounces+" + token} {
		if _, ok := ParseBounceAddress(other); ok {
			t.Errorf("ParseBounceAddress(%q) accepted", other)
		}
	}
}

func TestSplitReply(t *testing.T) {
	for _, c := range []struct {
		in       string
		code     int
		enhanced string
	}{
		{"smtp; 550 5.1.1 <nobody@example.com>: Recipient address rejected", 550, "5.1.1"},
		{"550-5.1.1 The email account that you tried to reach does not exist.", 550, "5.1.1"},
		{"SMTP; 452 4.2.2 Mailbox full", 452, "4.2.2"},
		{"553 sorry, that domain isn't in my list", 553, ""},
		{"X-Postfix; host mx.example.com said: 550 5.1.1", 0, ""},
		{"5.4.4, no route", 0, "5.4.4"},
		{"", 0, ""},
	} {
		code, enhanced := SplitReply(c.in)
		if code != c.code || enhanced != c.enhanced {
			t.Errorf("SplitReply(%q) = %d %q, want %d %q", c.in, code, enhanced, c.code, c.enhanced)
		}
	}
}

func TestSuppressionRules(t *testing.T) {
	for _, c := range []struct {
		enhanced string
		code     int
		want     bool
	}{
		{"5.1.1", 550, true}, {"5.1.10", 550, true}, {"5.2.1", 550, true}, {"", 551, true},
		{"5.7.1", 550, false}, {"5.2.2", 552, false}, {"4.2.2", 452, false}, {"", 550, false}, {"5.3.4", 552, false},
	} {
		if got := SuppressesAddress(c.enhanced, c.code); got != c.want {
			t.Errorf("SuppressesAddress(%q, %d) = %v", c.enhanced, c.code, got)
		}
	}
	failed := DSNRecipient{Action: DSNFailed, Status: "5.1.1", Diagnostic: "smtp; 550 5.1.1 no such user"}
	delayed := DSNRecipient{Action: DSNDelayed, Status: "4.4.1"}
	if !failed.Permanent() || failed.Delayed() || delayed.Permanent() || !delayed.Delayed() {
		t.Error("permanent and delayed reports mixed up")
	}
	if failed.Error() != "smtp; 550 5.1.1 no such user" || delayed.Error() != "4.4.1" {
		t.Error("a report's error reads wrong")
	}
	exim := DSNRecipient{Action: DSNFailed, Status: "5.0.0", Diagnostic: "smtp; 550 5.1.1 <gone@example.org>: User unknown"}
	if code, enhanced := exim.Codes(); code != 550 || enhanced != "5.1.1" {
		t.Errorf("Exim's report: %d %q", code, enhanced)
	}
	if _, enhanced := failed.Codes(); enhanced != "5.1.1" {
		t.Errorf("a report with a full status: %q", enhanced)
	}
	if _, enhanced := (DSNRecipient{Status: "5.2.2", Diagnostic: "smtp; 550 5.1.1 x"}).Codes(); enhanced != "5.2.2" {
		t.Errorf("a specific status gives way: %q", enhanced)
	}
	if (DSNRecipient{FinalRecipient: "a@x.example", OriginalRecipient: "b@x.example"}).Address() != "b@x.example" {
		t.Error("the original recipient goes first")
	}
}

func TestApplyReport(t *testing.T) {
	rcpts := []Recipient{{Email: "Ann@example.net", Status: RecipientSent}, {Email: "bob@example.net", Status: RecipientSent}}
	failed := DSNRecipient{FinalRecipient: "ann@example.net", Action: DSNFailed, Status: "5.1.1", Diagnostic: "smtp; 550 5.1.1 unknown"}
	out, status, bounced := ApplyReport(rcpts, DeliverySent, []DSNRecipient{failed,
		{FinalRecipient: "bob@example.net", Action: DSNDelayed, Status: "4.4.1", Diagnostic: "timeout"},
		{FinalRecipient: "stranger@example.net", Action: DSNFailed, Status: "5.1.1"}})
	if out[0].Status != RecipientBounced || out[0].Error != "smtp; 550 5.1.1 unknown" || out[1].Status != RecipientSent || out[1].Error != "timeout" {
		t.Fatalf("recipients %+v", out)
	}
	if status != DeliverySent || len(bounced) != 1 || rcpts[0].Status != RecipientSent {
		t.Fatalf("status %s, bounced %+v (input changed: %v)", status, bounced, rcpts[0].Status)
	}
	// The last one bounces: the message has bounced. A repeated report
	// bounces nothing new.
	out, status, bounced = ApplyReport(out, DeliverySent, []DSNRecipient{failed, {OriginalRecipient: "BOB@example.net", Action: DSNFailed, Status: "5.2.1"}})
	if status != DeliveryBounced || len(bounced) != 1 || bounced[0].Status != "5.2.1" || out[1].Status != RecipientBounced {
		t.Fatalf("status %s, bounced %+v, recipients %+v", status, bounced, out)
	}
	// A failed message stays failed; a report naming no recipient of a
	// one-recipient message is about that one.
	one := []Recipient{{Email: "alias@example.net", Status: RecipientSent}}
	out, status, _ = ApplyReport(one, DeliveryFailed, []DSNRecipient{{FinalRecipient: "real@example.net", Action: DSNFailed, Status: "5.1.1"}})
	if status != DeliveryFailed || out[0].Status != RecipientBounced {
		t.Fatalf("one recipient: %s %+v", status, out)
	}
}

func TestProviderReportsAsDSNLines(t *testing.T) {
	rcpts := []Recipient{{Email: "ann@example.net", Status: RecipientSent}, {Email: "bob@example.net", Status: RecipientSent}}
	delivered := DeliveryReport{Recipient: "ann@example.net", Outcome: OutcomeDelivered, Reason: "250 2.6.0 ok"}.DSN()
	complained := DeliveryReport{Recipient: "bob@example.net", Outcome: OutcomeComplained}.DSN()
	temporary := DeliveryReport{Recipient: "bob@example.net", Outcome: OutcomeBounced, Reason: "550 5.1.1 full"}.DSN() // not Permanent
	out, _, applied := ApplyReport(rcpts, DeliverySent, []DSNRecipient{delivered, complained, temporary})
	if out[0].Status != RecipientDelivered || out[1].Status != RecipientSent || out[1].Error != "550 5.1.1 full" || len(applied) != 2 {
		t.Fatalf("recipients %+v, applied %+v", out, applied)
	}
	if !complained.Suppresses() || complained.SuppressionReason() != ComplaintReason || delivered.Suppresses() || temporary.Suppresses() {
		t.Fatal("only the complaint suppresses")
	}
	// Delivered twice is one event; a permanent bounce of a bad address
	// suppresses, by its code or by the provider's word.
	_, _, again := ApplyReport(out, DeliverySent, []DSNRecipient{delivered})
	bad := DeliveryReport{Recipient: "ann@example.net", Outcome: OutcomeBounced, Permanent: true, Reason: "550 5.1.1 no such user"}.DSN()
	policy := DeliveryReport{Recipient: "ann@example.net", Outcome: OutcomeBounced, Permanent: true, Reason: "550 5.7.1 spam"}.DSN()
	ses := DeliveryReport{Recipient: "ann@example.net", Outcome: OutcomeBounced, Permanent: true, BadAddress: true, Status: "5.0.0"}.DSN()
	if len(again) != 0 || !bad.Suppresses() || policy.Suppresses() || !ses.Suppresses() || bad.Status != "5.1.1" {
		t.Fatalf("again %v, bad %v, policy %v, ses %v", again, bad.Suppresses(), policy.Suppresses(), ses.Suppresses())
	}
	events := ReportEvents(EmailMessage{}, append(applied, bad))
	if len(events) != 3 || events[0].Type != EmailBounced || events[1].Type != EmailDelivered || events[2].Type != EmailComplained {
		t.Fatalf("events %+v", events)
	}
}
