package app

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// SMS sends and receives text messages (spec §4).
type SMS struct {
	base
	store      ports.SMSStore
	gate       gate             // sending needs an active subscription
	numbers    ports.PhoneStore // the identity's number, and whose number a message came to
	identities *Identities
	telephony  ports.Telephony
	rules      *Rules // who an identity may text and hear from
	publicURL  string // where the provider's status reports reach us
	// verified tells callers waiting on an identity's verifications.
	verified *changeFeed[string]
}

// Send sends body to a number from the identity's phone: the identity key's
// own, or ?identity= for a management key (400 without it). It answers 404
// when the identity has no phone. The message is stored before the
// provider is asked, and removed again when the provider refuses or is
// down, so an error means nothing was sent or kept.
func (s *SMS) Send(ctx context.Context, p core.Principal, requested, to, body string) (core.SMSMessage, error) {
	start := time.Now()
	if err := requireSend(p, nil); err != nil {
		return core.SMSMessage{}, err
	}
	identityID, err := p.Scope(requested).Single("identity")
	if err != nil {
		return core.SMSMessage{}, err
	}
	if err := core.ValidateSMS(to, body); err != nil {
		return core.SMSMessage{}, err
	}
	if err := s.possibleNumber("to", to); err != nil {
		return core.SMSMessage{}, err
	}
	if err := s.rules.checkRecipients(ctx, p.AccountID, identityID, core.RuleSMS, map[string][]string{"to": {to}}); err != nil {
		return core.SMSMessage{}, err
	}
	if err := s.gate.allow(ctx, p.AccountID, core.ActSendSMS); err != nil {
		return core.SMSMessage{}, err
	}
	phone, err := s.numbers.PhoneOfIdentity(ctx, p.AccountID, identityID)
	if isNotFound(err) {
		if _, err := s.identities.lookup(ctx, p.AccountID, identityID); err != nil {
			return core.SMSMessage{}, err
		}
		return core.SMSMessage{}, core.NotFound("This identity has no phone number; provision one first.")
	}
	if err != nil {
		return core.SMSMessage{}, err
	}
	m := core.SMSMessage{AccountID: phone.AccountID, IdentityID: phone.IdentityID, PhoneID: phone.ID, PhoneNumber: phone.Number,
		FromNumber: phone.Number, ToNumber: to, Body: body, Direction: core.Outgoing, IsRead: true, Status: core.SMSQueued, CreatedAt: s.now()}
	m, _, err = s.store.SaveSMS(ctx, ports.NewSMS{Message: m})
	if err != nil {
		return core.SMSMessage{}, err
	}
	sent, err := s.telephony.SendSMS(ctx, ports.SendSMS{From: phone.Number, To: to, Body: body,
		StatusCallbackURL: s.publicURL + webhooksOf(s.telephony).Status})
	if err != nil {
		if derr := s.store.DeleteSMS(context.WithoutCancel(ctx), m.AccountID, m.ID); derr != nil {
			s.log.Error("sms: removing a message the provider refused failed", "message", m.ID, "err", derr)
		}
		outcome := "refused"
		if core.KindOf(err) == core.KindUnavailable {
			outcome = "unavailable"
		}
		m.ID = 0 // removed again
		s.observeSMS(m, outcome, time.Since(start), err)
		return core.SMSMessage{}, onField(err, "to")
	}
	// The provider may report on the message before its sid is recorded
	// here (the simulator reports again until it is).
	if err := s.store.SetSMSProvider(ctx, m.ID, sent.SID, sent.Status); err != nil {
		return core.SMSMessage{}, err
	}
	m.ProviderSID, m.Status = sent.SID, sent.Status
	s.observeSMS(m, string(m.Status), time.Since(start), nil)
	return m, nil
}

// InboundSMS is a text message a provider hands us.
type InboundSMS struct {
	From, To, Body string
	SID            string // the provider's id, which makes a repeated report harmless
	Media          []core.SMSMedia
}

// Receive stores an inbound message for the identity that owns the number
// it was sent to, and records a new sender as an auto contact. A message for
// a number we do not own is acknowledged and logged: retrying it would
// never help.
func (s *SMS) Receive(ctx context.Context, in InboundSMS) (core.SMSMessage, error) {
	start := time.Now()
	phone, err := s.numbers.PhoneByNumber(ctx, in.To)
	if isNotFound(err) {
		s.log.Warn("sms: a message for a number we do not own was dropped", "to", in.To, "sid", in.SID)
		s.observer.SMS(string(core.Incoming), "dropped")
		return core.SMSMessage{}, nil
	}
	if err != nil {
		return core.SMSMessage{}, err
	}
	// The provider has delivered the text already: a refused sender's is
	// kept, blocked (read, out of lists), and its sender not recorded.
	blocked, err := s.rules.blocked(ctx, phone.AccountID, phone.IdentityID, core.RuleSMS, in.From)
	if err != nil {
		return core.SMSMessage{}, err
	}
	now := s.now()
	m := core.SMSMessage{AccountID: phone.AccountID, IdentityID: phone.IdentityID, PhoneID: phone.ID, PhoneNumber: phone.Number,
		FromNumber: in.From, ToNumber: phone.Number, Body: core.StoredSMSBody(in.Body), Direction: core.Incoming, Status: core.SMSReceived,
		ProviderSID: in.SID, Media: core.KeptSMSMedia(in.Media), IsRead: blocked, Blocked: blocked, CreatedAt: now}
	if !blocked { // a blocked sender's code is no one's to use
		m.Verification = core.FindVerification(core.ReceivedText{From: in.From, Text: in.Body})
	}
	n := ports.NewSMS{Message: m}
	who := core.Correspondent{AccountID: phone.AccountID, IdentityID: phone.IdentityID, Phone: in.From}
	if c, ok := who.Contact(s.ids.NewUUID(), now); ok && !blocked {
		n.Correspondent = &c
	}
	stored, created, err := s.store.SaveSMS(ctx, n)
	if err == nil {
		outcome := "received"
		switch {
		case !created:
			outcome = "duplicate"
		case blocked:
			outcome = "blocked"
		}
		if created && stored.Verification != nil {
			s.verified.notify(stored.IdentityID)
		}
		s.observeSMS(stored, outcome, time.Since(start), nil)
	}
	return stored, err
}

// Serves reports whether a number is one of this service's: the simulator
// delivers texts here to those only.
func (s *SMS) Serves(ctx context.Context, number string) bool {
	_, err := s.numbers.PhoneByNumber(ctx, number)
	if err != nil && !isNotFound(err) {
		s.log.Error("sms: looking a number up failed", "err", err)
	}
	return err == nil
}

// VerifyProviderRequest checks a provider webhook's signature over the
// public URL it called and its form parameters.
func (s *SMS) VerifyProviderRequest(fullURL string, params url.Values, signature string) error {
	if signature == "" || !s.telephony.VerifyWebhook(fullURL, params, signature) {
		return core.Forbidden("The request signature is missing or invalid.")
	}
	return nil
}

// StatusReport records a provider's delivery report for a message we sent.
func (s *SMS) StatusReport(ctx context.Context, sid, status, errorCode, errorMessage string) error {
	st, ok := core.ParseSMSStatus(status)
	if sid == "" || !ok {
		return core.Invalid(core.NonFieldErrors, "MessageSid and a known MessageStatus are required.")
	}
	found, err := s.report(ctx, sid, st, strings.TrimSpace(strings.Join([]string{errorCode, errorMessage}, " ")))
	if err == nil && !found {
		s.log.Warn("sms: a status report for an unknown message was dropped", "sid", sid, "status", status)
	}
	return err
}

// SimulatedReport is the simulator's delivery report, recorded as a
// provider's is; it answers whether the text is known yet (the simulator
// reports an unknown one again, since Send records the text's sid only
// once the provider has answered).
func (s *SMS) SimulatedReport(ctx context.Context, sid string, status core.SMSStatus) bool {
	found, err := s.report(ctx, sid, status, "")
	if err != nil {
		s.log.Error("sms: recording a simulated delivery report failed", "sid", sid, "err", err)
		return true // reporting again would not help
	}
	return found
}

// report is the one way a delivery report moves a text.
func (s *SMS) report(ctx context.Context, sid string, status core.SMSStatus, errText string) (bool, error) {
	found, err := s.store.UpdateSMSStatus(ctx, sid, status, errText)
	if err == nil && found {
		s.log.Info("sms status report", "provider_sid", sid, "status", status, "error", errText)
	}
	return found, err
}

// Simulate injects an inbound message through the simulator, for trying
// the whole flow without a provider: what Twilio's webhook would bring,
// media included. It needs a management key, the simulator, and a number
// of the caller's own account. The provider's id is the simulator's own,
// never the caller's: a caller's could name another account's text.
func (s *SMS) Simulate(ctx context.Context, p core.Principal, in InboundSMS) (core.SMSMessage, error) {
	from, to := in.From, in.To
	if err := requireManagement(p); err != nil {
		return core.SMSMessage{}, err
	}
	if s.telephony.Name() != "sim" {
		return core.SMSMessage{}, core.NotFound("The telephony simulator is not in use (CALLSIGN_TELEPHONY is not sim).")
	}
	var problems core.Problems
	if !core.IsE164(from) {
		problems.Add("From", "Enter a phone number in E.164 form.")
	} else {
		problems.Merge(s.possibleNumber("From", from))
	}
	if strings.TrimSpace(in.Body) == "" && len(in.Media) == 0 {
		problems.Add("Body", "This field may not be blank unless the message carries media.")
	}
	if err := problems.Err(); err != nil {
		return core.SMSMessage{}, err
	}
	phone, err := s.numbers.PhoneByNumber(ctx, to)
	if isNotFound(err) || err == nil && phone.AccountID != p.AccountID {
		return core.SMSMessage{}, core.NotFound("No number of this account is %q.", to)
	}
	if err != nil {
		return core.SMSMessage{}, err
	}
	sid, err := core.RandomToken(s.random, 16)
	if err != nil {
		return core.SMSMessage{}, err
	}
	in.SID = "SMsim" + sid
	return s.Receive(ctx, in)
}

// List lists a page of the messages in scope, newest first.
func (s *SMS) List(ctx context.Context, p core.Principal, requested string, f ports.SMSFilter) ([]core.SMSMessage, int, error) {
	f.Scope = p.Scope(requested)
	return s.store.SMSList(ctx, f)
}

// Get shows one message in scope.
func (s *SMS) Get(ctx context.Context, p core.Principal, id int64) (core.SMSMessage, error) {
	m, err := s.store.SMS(ctx, p.AccountID, id)
	if err != nil {
		return m, err
	}
	if !p.Scope("").Allows(m.AccountID, m.IdentityID) {
		return core.SMSMessage{}, core.NotFound("Message not found.")
	}
	return m, nil
}

// Delete deletes a message in scope and counts its conversation again. A
// text already handed to the provider is not called back: only our record
// of it goes.
func (s *SMS) Delete(ctx context.Context, p core.Principal, id int64) error {
	m, err := s.Get(ctx, p, id)
	if err != nil {
		return err
	}
	return s.store.DeleteSMS(ctx, m.AccountID, m.ID)
}

// SetRead marks a message read or unread.
func (s *SMS) SetRead(ctx context.Context, p core.Principal, id int64, read bool) (core.SMSMessage, error) {
	m, err := s.Get(ctx, p, id)
	if err != nil || m.IsRead == read {
		return m, err
	}
	if err := s.store.SetSMSRead(ctx, p.AccountID, id, read); err != nil {
		return m, err
	}
	m.IsRead = read
	return m, nil
}

// Conversations lists a page of the conversation summaries in scope,
// latest first. phone narrows them to one of our numbers, by its id or its
// E.164 number.
func (s *SMS) Conversations(ctx context.Context, p core.Principal, requested string, hasUnread *bool, phone string, page ports.Page) ([]core.Conversation, int, error) {
	f := ports.ConversationFilter{Scope: p.Scope(requested), HasUnread: hasUnread, Page: page}
	if phone != "" {
		id, err := s.phoneFilter(ctx, p, phone)
		if err != nil || id == 0 {
			return nil, 0, err
		}
		f.PhoneID = id
	}
	return s.store.Conversations(ctx, f)
}

// phoneFilter resolves the phone filter; 0 when no number of the caller's matches.
func (s *SMS) phoneFilter(ctx context.Context, p core.Principal, phone string) (int64, error) {
	if !strings.HasPrefix(phone, "+") {
		if id, err := strconv.ParseInt(phone, 10, 64); err == nil && id > 0 {
			return id, nil
		}
	}
	if !core.IsE164(phone) {
		return 0, core.Invalid("phone", "Pass a phone number id or an E.164 number.")
	}
	if err := s.possibleNumber("phone", phone); err != nil {
		return 0, err
	}
	n, err := s.numbers.PhoneByNumber(ctx, phone)
	if isNotFound(err) || err == nil && n.AccountID != p.AccountID {
		return 0, nil
	}
	return n.ID, err
}

// Conversation shows a conversation and its messages, oldest first. A
// malformed id is 400, a missing one 404.
func (s *SMS) Conversation(ctx context.Context, p core.Principal, id string) (core.Conversation, []core.SMSMessage, error) {
	phoneID, counterpart, ok := core.ParseConversationID(id)
	if !ok {
		return core.Conversation{}, nil, core.Invalid("conversation_id", "A conversation id is {phone_id}_{E.164 number}, such as 12_+14155550100.")
	}
	c, err := s.store.Conversation(ctx, p.AccountID, phoneID, counterpart)
	if err != nil {
		return c, nil, err
	}
	if !p.Scope("").Allows(c.AccountID, c.IdentityID) {
		return core.Conversation{}, nil, core.NotFound("Conversation not found.")
	}
	msgs, _, err := s.store.SMSList(ctx, ports.SMSFilter{Scope: p.Scope(""), PhoneID: phoneID, Counterpart: counterpart, Oldest: true})
	return c, msgs, err
}
