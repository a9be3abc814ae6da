package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Receiving is inbound mail: where an address's mail goes (route), which
// recipients the SMTP listener takes, and storing what arrives, over SMTP,
// from an IMAP source or from the outbox for our own inboxes (spec §4).
type Receiving struct {
	base
	messages    ports.MailStore
	inboxes     ports.InboxStore        // which inbox an address names
	domains     *Domains                // which domains we receive for
	rules       *Rules                  // who an identity may hear from
	gate        gate                    // an account at its storage quota receives no more
	bounces     *bounces                // reports sent to bounce addresses
	mailAuth    ports.MailAuthenticator // checks received mail
	inboundAuth core.InboundAuth        // which connections are checked
	parser      ports.MailParser
	maxBytes    int64      // bounds a message
	spam        spamFilter // judges received mail; no checker: nothing is judged
	// postmaster is the inbox that receives postmaster@ each platform
	// domain; "" means the service's oldest inbox.
	postmaster string

	// changes tells mail clients watching an inbox that its mail changed.
	changes *changeFeed[int64]
	// verified tells callers waiting on an identity's verifications.
	verified *changeFeed[string]
	// known skips recording correspondents recorded moments ago.
	known knownSenders
	// recipients caches ResolveRecipient's answers.
	recipients inboxCache
	// room caches the storage readings roomFor makes.
	room storageRoom
}

// Errors of the inbound path, which the SMTP adapter turns into replies.
var (
	errNoSuchMailbox = core.NotFound("No such mailbox here.")
	errRelayDenied   = core.Forbidden("This service does not relay mail for that domain.")
)

// destination is where mail for an address goes.
type destination int

const (
	toRelay   destination = iota // a domain we do not serve: the outside world's
	toInbox                      // one of our inboxes
	toNowhere                    // one of our domains, without that mailbox: refused
)

// route decides where mail for addr goes, and to which inbox when it stays
// here. Both doors ask it: the SMTP listener takes only mail for our
// inboxes (ResolveRecipient), and the outbox delivers that itself and
// hands the rest to the relay. postmaster@ every domain we serve stays
// here (RFC 5321 §4.5.1): an inbox of that name, else, for an account's own
// domain, the account's oldest inbox, and for a platform domain the
// configured postmaster inbox, else the service's oldest. route fails when
// it cannot decide (the store is down), and with Invalid for what is not
// an address.
func (s *Receiving) route(ctx context.Context, addr string) (destination, core.Inbox, error) {
	local, domain, ok := core.SplitAddress(strings.TrimSpace(addr))
	if !ok {
		return 0, core.Inbox{}, core.Invalid("to", "Not an address.")
	}
	domain = core.NormalizeDomain(domain)
	email := strings.ToLower(local) + "@" + domain
	now := s.now()
	if in, ok := s.recipients.get(email, now); ok {
		return toInbox, in, nil
	}
	served, owner, err := s.domains.Receiving(ctx, domain)
	if err != nil {
		return 0, core.Inbox{}, err
	}
	if !served {
		return toRelay, core.Inbox{}, nil
	}
	in, err := s.inboxes.InboxByEmail(ctx, email)
	if isNotFound(err) && strings.HasPrefix(email, "postmaster@") {
		in, err = s.postmasterInbox(ctx, owner)
	}
	switch {
	case isNotFound(err):
		return toNowhere, core.Inbox{}, nil
	case err != nil:
		return 0, core.Inbox{}, err
	}
	s.recipients.put(email, in, now)
	return toInbox, in, nil
}

// ResolveRecipient finds the inbox an envelope recipient names (route). A
// domain we do not serve is Forbidden (no open relay); an unknown mailbox
// on one of ours is NotFound; an envelope sender the inbox's identity's
// inbound rules refuse is ErrSenderRefused (an empty sender is judged by
// its From after DATA, in Deliver); an account at its storage quota is
// refused (roomFor). Bounce addresses take every sender.
func (s *Receiving) ResolveRecipient(ctx context.Context, from, addr string) (core.Inbox, error) {
	if token, ok := core.ParseBounceAddress(addr); ok {
		return s.bounces.bounceRecipient(ctx, addr, token)
	}
	dest, in, err := s.route(ctx, addr)
	switch {
	case err != nil:
		return core.Inbox{}, err
	case dest == toRelay:
		return core.Inbox{}, errRelayDenied
	case dest == toNowhere:
		return core.Inbox{}, errNoSuchMailbox
	}
	if from != "" {
		if blocked, err := s.rules.blocked(ctx, in.AccountID, in.IdentityID, core.RuleEmail, from); err != nil {
			return core.Inbox{}, err
		} else if blocked {
			return core.Inbox{}, ErrSenderRefused
		}
	}
	return in, s.roomFor(ctx, in)
}

// roomFor refuses new mail for an inbox whose account is at its storage
// quota: the error names QuotaStorage, which the SMTP listener answers
// 452 4.2.2 at RCPT, an IMAP source waits on and the outbox retries. A
// recent reading that left room answers (storageRoom); a refusal is
// always read afresh.
func (s *Receiving) roomFor(ctx context.Context, in core.Inbox) error {
	limit := s.gate.limits[core.QuotaStorage]
	now := s.now()
	if limit > 0 && s.room.fits(in.AccountID, limit, now) {
		return nil
	}
	stores := s.room.stores(in.AccountID)
	used, err := s.gate.allowing(ctx, in.AccountID, "", core.ActReceiveMail)
	if err == nil && limit > 0 {
		s.room.put(in.AccountID, used.Used[core.QuotaStorage], now, stores)
	}
	return err
}

// postmaster is the inbox of postmaster@ a domain that has no inbox of
// that name: owner's oldest for an account's own domain; for a platform
// domain ("" owner), the configured one or the service's oldest.
func (s *Receiving) postmasterInbox(ctx context.Context, owner string) (core.Inbox, error) {
	if owner == "" && s.postmaster != "" {
		return s.inboxes.InboxByEmail(ctx, s.postmaster)
	}
	return s.inboxes.FirstInbox(ctx, owner)
}

// InboundMail is a message arriving for some of our inboxes.
type InboundMail struct {
	EnvelopeFrom string
	Inboxes      []core.Inbox // resolved recipients; one copy is stored per inbox
	// Raw is the sender's bytes, after Headroom bytes of free room.
	Raw []byte
	// Headroom is how many bytes at the start of Raw are free room, not the
	// sender's: what goes on top of the stored source (Trace, the checks'
	// verdict) is written there when it fits, so that storing a large
	// message does not copy it whole. What does not fit is copied.
	Headroom int
	// Trace is what the receiving adapter puts on top of the stored source
	// (Return-Path, Received: RFC 5321 §4.4); the size limit is the sender's
	// bytes alone.
	Trace []byte
	// Dedupe skips an inbox that already holds the message (by Message-ID):
	// for redeliveries, such as mail pulled again from an IMAP source.
	Dedupe bool
	// Origin is the SMTP client the message came from, whose mail is
	// checked (SPF, DKIM, DMARC); nil for mail that crossed no SMTP
	// connection of ours (an IMAP source), which is not.
	Origin *ports.InboundOrigin
	// Envelope are the RCPT TO addresses: a bounce address among them
	// (bounces+<token>@…) makes the message a possible bounce report.
	Envelope []string
	// Provider is the mail provider that received the message for us
	// (SES, Mailgun: no MX of ours) and what its checks found; nil for
	// mail that did not come through one.
	Provider *ProviderReceipt
	// sourceHash is the hex SHA-256 of Raw as the SMTP sender or the
	// provider sent it, which recognises their retries (core.FileMail);
	// "" for other mail.
	sourceHash string
	// traceContinued says that the sender's bytes begin with white space,
	// which the parser reads as continuing the field before it: once our
	// trace goes on top, the stored source no longer reads as the sender's
	// bytes did, so the row keeps the HTML read at receipt.
	traceContinued bool
}

// ProviderReceipt is a mail provider's word on a message it received
// for us: we never saw the sending server, so its SPF, DKIM and DMARC
// verdicts are the message's authentication, marked as the provider's.
type ProviderReceipt struct {
	Name           string // "ses", "mailgun": the stored checked_by
	Authentication core.Authentication
}

// authCheckTimeout bounds the checks of one message: SPF may chain up to
// ten lookups. What is not answered by then is a temperror.
const authCheckTimeout = 10 * time.Second

// authenticate checks a message that came over SMTP, as CALLSIGN_INBOUND_AUTH
// says: nil when it is not checked at all, core.Unchecked for a connection
// the setting exempts (loopback under "on").
func (s *Receiving) authenticate(ctx context.Context, in InboundMail) *core.Authentication {
	if p := in.Provider; p != nil {
		a := p.Authentication
		a.Checked, a.CheckedBy = true, p.Name
		return &a
	}
	if in.Origin == nil || s.mailAuth == nil || s.inboundAuth == "" || s.inboundAuth == core.InboundAuthOff {
		return nil
	}
	a := core.Unchecked
	if s.inboundAuth.Checks(in.Origin.IP) {
		ctx, cancel := context.WithTimeout(ctx, authCheckTimeout)
		defer cancel()
		a = s.mailAuth.Authenticate(ctx, *in.Origin, in.Raw)
	}
	return &a
}

// Deliver parses a message and stores one copy per inbox, with its
// attachments, thread and sender contact, durably, before it returns. It
// fails with KindInvalid only when the bytes are not a message at all;
// any other error means nothing was stored and the sender should retry.
func (s *Receiving) Deliver(ctx context.Context, in InboundMail) (stored []core.EmailMessage, err error) {
	start := time.Now()
	room := in.Raw[:in.Headroom]
	in.Raw, in.Headroom = in.Raw[in.Headroom:], 0
	defer func() { s.observeInbound(in, stored, err, time.Since(start)) }()
	if int64(len(in.Raw)) > s.maxBytes {
		return nil, core.TooLarge("The message is larger than %d bytes.", s.maxBytes)
	}
	// What the sender sent is judged and read; the trace only goes on top.
	// Attachments stay in the source: only their sizes are read.
	parsed, err := s.parser.Describe(in.Raw)
	if core.KindOf(err) == core.KindTooLarge {
		return nil, err
	}
	if err != nil {
		return nil, core.Invalid(core.NonFieldErrors, "Unreadable message: %v", err)
	}
	if in.Inboxes, err = s.bounces.takeReports(ctx, in); err != nil || len(in.Inboxes) == 0 {
		return nil, err
	}
	if (in.Origin != nil || in.Provider != nil) && !in.Dedupe {
		sum := sha256.Sum256(in.Raw)
		in.sourceHash = hex.EncodeToString(sum[:])
	}
	// The checks read the sender's bytes; the verdict goes on top of them,
	// below the trace.
	auth := s.authenticate(ctx, in)
	if top := s.stamp(in.Trace, auth); len(top) > 0 {
		in.traceContinued = in.Raw[0] == ' ' || in.Raw[0] == '\t'
		in.Raw = onTop(top, in.Raw, room)
	}
	verdict, isSpam, err := s.judgeSpam(ctx, in)
	if err != nil {
		return nil, err
	}
	// Announced once what may wait on the network (DNS, the spam filter)
	// is behind it: a commit waits briefly for deliveries about to store,
	// not for those still waiting on others.
	if a, ok := s.messages.(ports.MailArrivals); ok {
		defer a.Arriving()()
	}
	now := s.now()
	var verification *core.Verification
	if !isSpam { // spam's codes and links are not offered (unless it is moved out: MarkSpam)
		verification = examine(parsed, in.EnvelopeFrom)
	}
	mails := make([]ports.NewMail, 0, len(in.Inboxes))
	seen := map[int64]bool{}
	for _, inbox := range in.Inboxes {
		if seen[inbox.ID] {
			continue
		}
		seen[inbox.ID] = true
		nm, err := s.inboundCopy(parsed, in, inbox, auth, verification, now)
		if err != nil {
			return nil, err
		}
		nm.Message.Spam, nm.Message.IsSpam = verdict, isSpam
		if err := s.judgeSender(ctx, in, &nm); err != nil {
			return nil, err
		}
		mails = append(mails, nm)
	}
	return s.save(ctx, mails)
}

// Refusals of the spam filter, for mail still offered over SMTP: the
// listener answers 550 5.7.1 and 451 4.7.1.
var (
	ErrSpamRefused  = errors.New("the spam filter refuses this message")
	ErrSpamDeferred = errors.New("the spam filter defers this message")
)

// DefaultSpamTimeout bounds one spam check when the setting does not.
const DefaultSpamTimeout = 5 * time.Second

// judgeSpam asks the spam filter about a message (in.Raw: the sender's
// bytes with our verdict on top) and applies core.JudgeSpam: the verdict
// to store and whether it is spam, or a refusal. Only mail offered over
// our SMTP listener can be refused; mail a provider or an IMAP source
// accepted already is filed as spam instead. A filter that does not answer
// in time costs no mail: the message is accepted unjudged (nil verdict),
// counted and logged.
func (s *Receiving) judgeSpam(ctx context.Context, in InboundMail) (*core.SpamVerdict, bool, error) {
	if s.spam.checker == nil {
		return nil, false, nil
	}
	q := ports.SpamQuery{MailFrom: in.EnvelopeFrom, Recipients: in.Envelope}
	if o := in.Origin; o != nil {
		q.IP, q.HELO = o.IP, o.HELO
	}
	ctx, cancel := context.WithTimeout(ctx, s.spam.timeout)
	defer cancel()
	v, err := s.spam.checker.Check(ctx, q, in.Raw)
	if err != nil {
		s.observer.SpamCheck("unavailable")
		s.log.Warn("spam filter unavailable; message accepted unjudged", "envelope_from", in.EnvelopeFrom, "err", err)
		return nil, false, nil
	}
	v = v.Bounded()
	refusable := in.Origin != nil && in.Provider == nil
	switch core.JudgeSpam(v.Action, refusable) {
	case core.SpamRefuse:
		s.observer.SpamCheck("refused")
		return nil, false, ErrSpamRefused
	case core.SpamDefer:
		s.observer.SpamCheck("deferred")
		return nil, false, ErrSpamDeferred
	case core.SpamFile:
		s.observer.SpamCheck("spam")
		return &v, true, nil
	}
	s.observer.SpamCheck("ham")
	return &v, false, nil
}

// judgeSender applies the inbound rules to mail whose envelope sender was
// not judged at RCPT: an empty one (bounces, some notifications) or none
// at all (an IMAP source). Its From is judged instead, after DATA, when the
// message is accepted already: refused mail is stored blocked (read, out
// of lists, threads and IMAP, its sender not recorded, not announced).
func (s *Receiving) judgeSender(ctx context.Context, in InboundMail, nm *ports.NewMail) error {
	if in.EnvelopeFrom != "" && in.Origin != nil {
		return nil
	}
	m := &nm.Message
	blocked, err := s.rules.blocked(ctx, m.AccountID, m.IdentityID, core.RuleEmail, m.FromEmail)
	if err != nil || !blocked {
		return err
	}
	m.Blocked, m.IsRead, m.Verification, nm.Correspondent = true, true, nil, nil
	return nil
}

// stamp is what goes on top of a received message: the trace, then the
// Authentication-Results field when we checked the message (a provider
// writes its own fields into what it hands us).
func (s *Receiving) stamp(trace []byte, auth *core.Authentication) []byte {
	if auth == nil || auth.CheckedBy != "" || s.mailAuth == nil {
		return trace
	}
	return append(append([]byte(nil), trace...), s.mailAuth.ResultsField(*auth)...)
}

// onTop is raw with top in front of it: written into room, which raw
// follows in one buffer, when it fits; else a copy.
func onTop(top, raw, room []byte) []byte {
	if start := len(room) - len(top); start >= 0 {
		copy(room[start:], top)
		return room[start : len(room)+len(raw)]
	}
	return append(append(make([]byte, 0, len(top)+len(raw)), top...), raw...)
}

// save stores mails, then tells whoever watches their inboxes. It is the
// one way mail is stored, so the bounds of a stored message are applied
// here.
func (s *Receiving) save(ctx context.Context, mails []ports.NewMail) ([]core.EmailMessage, error) {
	for i := range mails {
		mails[i].Message.BoundBodies()
	}
	stored, err := s.messages.SaveMail(ctx, mails)
	if err != nil {
		return nil, err
	}
	for _, nm := range mails { // a duplicate not stored again is counted too: too much only reads again
		s.room.add(nm.Message.AccountID, storedBytes(nm))
	}
	now := s.now()
	for _, nm := range mails {
		if c := nm.Correspondent; c != nil {
			s.known.add(c.IdentityID, c.Email, now)
		}
	}
	inboxes := make([]int64, 0, len(stored))
	for _, m := range stored {
		if m.Blocked {
			continue // blocked mail is not announced
		}
		inboxes = append(inboxes, m.InboxID)
		if m.Verification != nil {
			s.verified.notify(m.IdentityID)
		}
	}
	s.changes.notify(inboxes...)
	return stored, nil
}

// examine looks once at a received message for a one-time code or a
// sign-in link (core.FindVerification); every copy stored carries it.
func examine(parsed ports.ParsedMail, envelopeFrom string) *core.Verification {
	return core.FindVerification(core.ReceivedText{From: senderOf(parsed, envelopeFrom), Subject: parsed.Subject,
		Text: parsed.Text, HTML: parsed.HTML})
}

// searchAttachmentText bounds how much attachment text a message's search
// index holds.
const searchAttachmentText = 64 << 10

// attachmentsText is what the search index holds of a message's
// attachments: the text of its text/* files other than HTML, up to
// searchAttachmentText bytes. PDFs are not read (no pure-Go PDF text
// extractor is both well kept and cheap enough to run at receipt).
func attachmentsText(parts []ports.MailPart) string {
	var b strings.Builder
	for _, p := range parts {
		if !strings.HasPrefix(p.ContentType, "text/") || p.ContentType == "text/html" || b.Len() >= searchAttachmentText {
			continue
		}
		n := min(len(p.Content), searchAttachmentText-b.Len())
		b.WriteString(strings.ToValidUTF8(string(p.Content[:n]), "\uFFFD"))
		b.WriteByte('\n')
	}
	return b.String()
}

// senderOf is who sent a received message: its From, else its envelope sender.
func senderOf(parsed ports.ParsedMail, envelopeFrom string) string {
	if parsed.FromEmail != "" {
		return parsed.FromEmail
	}
	return envelopeFrom
}

// inboundCopy is the record of parsed for one inbox.
func (s *Receiving) inboundCopy(parsed ports.ParsedMail, in InboundMail, inbox core.Inbox, auth *core.Authentication,
	verification *core.Verification, now time.Time) (ports.NewMail, error) {
	threadID, err := core.NewThreadID(s.random, now)
	if err != nil {
		return ports.NewMail{}, err
	}
	from := senderOf(parsed, in.EnvelopeFrom)
	msgID := parsed.MessageID
	switch {
	case msgID == "" && in.Dedupe:
		// Derived from the bytes, so that a redelivery matches the first copy.
		sum := sha256.Sum256(in.Raw)
		msgID = "generated." + hex.EncodeToString(sum[:16]) + "@" + domainOf(inbox.Email)
	case msgID == "":
		// Replies need something to point at.
		msgID = "generated." + s.ids.NewUUID() + "@" + domainOf(inbox.Email)
	}
	header := parsed.Header
	header.MessageID, header.FromEmail = msgID, from
	header.Clean()
	m := core.EmailMessage{AccountID: inbox.AccountID, IdentityID: inbox.IdentityID, InboxID: inbox.ID, Header: header,
		Text: parsed.Text, HTML: parsed.HTML, Direction: core.Incoming, Authentication: auth, Verification: verification,
		SourceHash: in.sourceHash, CreatedAt: now}
	nm := ports.NewMail{Message: m, NewThreadID: threadID, Raw: in.Raw, HTMLInRaw: !in.traceContinued, Dedupe: in.Dedupe}
	// The bytes stay in the source, which is stored anyway.
	nm.SearchText = attachmentsText(parsed.Attachments)
	for i, part := range parsed.Attachments {
		nm.Attachments = append(nm.Attachments, ports.AttachmentContent{
			Attachment: core.Attachment{ID: s.ids.NewUUID(), AccountID: inbox.AccountID, IdentityID: inbox.IdentityID,
				Filename: part.Filename, ContentType: part.ContentType, Size: int64(part.Size),
				Inline: part.Inline, ContentID: part.ContentID, CreatedAt: now},
			InSource: true, Position: i,
		})
	}
	if s.known.has(inbox.IdentityID, from, now) {
		return nm, nil
	}
	who := core.Correspondent{AccountID: inbox.AccountID, IdentityID: inbox.IdentityID, Email: from, Name: parsed.FromName, Inbox: inbox.Email}
	if c, ok := who.Contact(s.ids.NewUUID(), now); ok {
		nm.Correspondent = &c
	}
	return nm, nil
}

func domainOf(addr string) string {
	_, d, _ := core.SplitAddress(addr)
	return d
}

// deliverLocally stores an outgoing message in our own recipient inboxes,
// through the inbound path. A retried attempt does not make copies.
func (s *Receiving) deliverLocally(ctx context.Context, from string, inboxes []core.Inbox, raw []byte) error {
	parsed, err := s.parser.Parse(raw)
	if err != nil {
		return err
	}
	now := s.now()
	auth := core.LocalAuthentication
	if top := s.stamp(nil, &auth); len(top) > 0 {
		raw = append(top, raw...)
	}
	mails := make([]ports.NewMail, 0, len(inboxes))
	verification := examine(parsed, from)
	for _, in := range inboxes {
		nm, err := s.inboundCopy(parsed, InboundMail{EnvelopeFrom: from, Raw: raw, Dedupe: true}, in, &auth, verification, now)
		if err != nil {
			return err
		}
		mails = append(mails, nm)
	}
	_, err = s.save(ctx, mails)
	return err
}

// storedBytes is what storing nm adds to its account's storage.
func storedBytes(nm ports.NewMail) int64 {
	n := core.MessageStoredBytes(nm.Raw)
	for _, a := range nm.Attachments {
		n += core.AttachmentStoredBytes(a.Content, a.InSource)
	}
	return n
}
