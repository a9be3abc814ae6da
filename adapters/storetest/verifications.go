package storetest

import (
	"testing"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// testVerifications: a received message's verification is stored with it
// and read back; the list holds an identity's received mail and texts that
// carry one, newest first, filtered by time, sender and source.
func testVerifications(t *testing.T, f *fixture) {
	a := f.account()
	ident, in := f.identity(a.ID)
	other, otherIn := f.identity(a.ID)
	p := f.phone(ident)

	code := incoming(in, "<c@x>", "Your code", f.tick(), "")
	code.Message.FromEmail, code.Message.Verification = "no-reply@Accounts.Example.com", core.NewVerification("482913", "")
	plain := incoming(in, "<p@x>", "Hello", f.tick(), "")
	sent := incoming(in, "<s@x>", "Sent", f.tick(), "")
	sent.Message.Direction, sent.Message.Verification = core.Outgoing, core.NewVerification("111111", "")
	elsewhere := incoming(otherIn, "<o@x>", "Other", f.tick(), "")
	elsewhere.Message.Verification = core.NewVerification("222222", "")
	mails := f.save(code, plain, sent, elsewhere)
	if v := mails[0].Verification; v == nil || v.Code != "482913" || v.Kind != core.VerificationCode || mails[1].Verification != nil {
		t.Fatalf("saved: %+v %+v", v, mails[1].Verification)
	}
	back, err := f.s.Message(f.ctx, a.ID, mails[0].ID)
	f.must(err)
	if back.Verification == nil || *back.Verification != *mails[0].Verification {
		t.Fatalf("read back: %+v", back.Verification)
	}

	text := smsFor(p, core.Incoming, "+14155550199", "G-771204 is your code", "SMv1", f.tick())
	text.Message.Verification = core.NewVerification("G-771204", "https://g.co/v?t=1")
	s := f.saveSMS(text)
	if s.Verification == nil || s.Verification.Kind != core.VerificationBoth {
		t.Fatalf("sms saved: %+v", s.Verification)
	}
	sBack, err := f.s.SMS(f.ctx, a.ID, s.ID)
	f.must(err)
	if sBack.Verification == nil || sBack.Verification.Link != "https://g.co/v?t=1" {
		t.Fatalf("sms read back: %+v", sBack.Verification)
	}

	list := func(v ports.VerificationFilter) []core.ReceivedVerification {
		t.Helper()
		v.AccountID, v.IdentityID = a.ID, ident.ID
		if v.Limit == 0 {
			v.Limit = 20
		}
		out, err := f.s.Verifications(f.ctx, v)
		f.must(err)
		return out
	}
	all := list(ports.VerificationFilter{})
	if len(all) != 2 || all[0].Source != core.VerificationBySMS || all[0].MessageID != s.ID || all[0].From != "+14155550199" ||
		all[1].Source != core.VerificationByEmail || all[1].MessageID != mails[0].ID || all[1].Code != "482913" ||
		!all[1].CreatedAt.Equal(mails[0].CreatedAt) || all[1].IdentityID != ident.ID {
		t.Fatalf("all: %+v", all)
	}
	for name, c := range map[string]struct {
		f    ports.VerificationFilter
		want int
	}{
		"email":          {ports.VerificationFilter{Source: core.VerificationByEmail}, 1},
		"sms":            {ports.VerificationFilter{Source: core.VerificationBySMS}, 1},
		"from, any case": {ports.VerificationFilter{From: "accounts.EXAMPLE"}, 1},
		"from, no match": {ports.VerificationFilter{From: "%"}, 0},
		"after the mail": {ports.VerificationFilter{After: mails[0].CreatedAt}, 1},
		"limit":          {ports.VerificationFilter{Limit: 1}, 1},
	} {
		if got := list(c.f); len(got) != c.want {
			t.Errorf("%s: %+v", name, got)
		}
	}
	out, err := f.s.Verifications(f.ctx, ports.VerificationFilter{AccountID: a.ID, IdentityID: other.ID, Limit: 20})
	f.must(err)
	if len(out) != 1 || out[0].Code != "222222" {
		t.Fatalf("other identity: %+v", out)
	}
}
