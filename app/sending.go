package app

import (
	"context"
	"fmt"
	"html"
	"net/mail"
	"sort"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Sending composes mail: new messages, replies and forwards, drafts kept
// unsent, and the files uploaded to attach; what it composes it queues in
// the Outbox (spec §4).
type Sending struct {
	base
	drafts     ports.DraftStore // messages kept unsent
	uploads    ports.MailStore  // files to attach later
	inboxes    *Inboxes         // the inbox a message leaves from
	reading    *Reading         // the messages answered, the files attached
	outbox     *Outbox          // where composed messages wait to leave
	identities *Identities      // mail is sent, and files uploaded, for an identity
	rules      *Rules           // who an identity may mail
	// suppressions refuses sending to addresses that bounced.
	suppressions *Suppressions
	domains      *Domains // signing
	gate         gate     // sending needs an active subscription
	composer     ports.MailComposer
	maxBytes     int64 // bounds a composed message and an upload
}

// SendInput is what a caller writes: the body of compose, reply, reply-all
// and forward. Nil or empty means absent.
type SendInput struct {
	To, Cc, Bcc   []string
	Subject       *string
	Content       *string // the text body
	HTML          string  // an optional HTML alternative
	AttachmentIDs []string
}

// maxSubjectLength is RFC 5322's line limit, less room for "Subject: ".
const maxSubjectLength = 900

// maxRecipients bounds the recipients of one message, as the SMTP listener does.
const maxRecipients = 100

// maxAttachments bounds the files of one message, leaving room in
// core.MaxMessageParts for the text, HTML and multipart parts around them.
const maxAttachments = core.MaxMessageParts - 10

// outgoing is a message on its way to being composed and queued: queue
// gives its header a Message-ID and the inbox's address as From.
type outgoing struct {
	inbox core.Inbox
	core.Header
	bcc         []string
	text, html  string
	attachments []ports.AttachmentContent
	// names holds the display names given with recipients, by lower-cased
	// address; the stored message keeps bare addresses, the header the names.
	names map[string]string
}

// requireSend is the one check of the right to send, asked by every route
// that sends: compose, reply, reply-all, forward, a text, and a draft's
// send (d, nil for the others).
func requireSend(p core.Principal, d *core.Draft) error { return p.SendRefusal(d) }

// Compose sends a new message from the identity's inbox: an identity key's
// own (or ?inbox= of its own), or ?identity= / ?inbox= for a management key.
func (s *Sending) Compose(ctx context.Context, p core.Principal, requested string, inboxID int64, in SendInput) (core.EmailMessage, error) {
	if err := requireSend(p, nil); err != nil {
		return core.EmailMessage{}, err
	}
	inbox, err := s.sendingInbox(ctx, p, requested, inboxID)
	if err != nil {
		return core.EmailMessage{}, err
	}
	o, problems := composed(inbox, in)
	return s.queue(ctx, p, o, in.AttachmentIDs, &problems, s.now(), nil)
}

// composed is a new message from inbox.
func composed(inbox core.Inbox, in SendInput) (outgoing, core.Problems) {
	var problems core.Problems
	d := outgoing{inbox: inbox, names: map[string]string{}}
	d.To = d.addressList(&problems, "to_email", in.To, true)
	d.Cc = d.addressList(&problems, "cc", in.Cc, false)
	d.bcc = d.addressList(&problems, "bcc", in.Bcc, false)
	if in.Subject != nil {
		d.Subject = checkSubject(&problems, *in.Subject)
	}
	d.text, d.html = requireContent(&problems, in)
	return d, problems
}

// Reply answers a message: the sender only, or with all, every recipient
// too (never ourselves). The subject is derived from the original.
func (s *Sending) Reply(ctx context.Context, p core.Principal, id int64, in SendInput, all bool) (core.EmailMessage, error) {
	if err := requireSend(p, nil); err != nil {
		return core.EmailMessage{}, err
	}
	orig, inbox, err := s.original(ctx, p, id)
	if err != nil {
		return core.EmailMessage{}, err
	}
	o, problems := answered(orig, inbox, in, all)
	return s.queue(ctx, p, o, in.AttachmentIDs, &problems, s.now(), nil)
}

// answered is a reply to orig, which sits in inbox.
func answered(orig core.EmailMessage, inbox core.Inbox, in SendInput, all bool) (outgoing, core.Problems) {
	var problems core.Problems
	d := outgoing{inbox: inbox, Header: replyHeader(orig, core.ReplySubject(orig.Subject)), names: map[string]string{}}
	self := func(a string) bool { return strings.EqualFold(a, inbox.Email) }
	if orig.Direction == core.Incoming {
		d.To = []string{orig.FromEmail}
		d.names[strings.ToLower(orig.FromEmail)] = orig.FromName
	} else {
		d.To = orig.To // replying to our own message continues to its recipients
	}
	extraCc := d.addressList(&problems, "cc", in.Cc, false)
	if all {
		d.To = uniqueAddrs(append(d.To, orig.To...), self)
		d.Cc = uniqueAddrs(append(append([]string(nil), orig.Cc...), extraCc...), func(a string) bool { return self(a) || containsFold(d.To, a) })
	} else {
		d.To = uniqueAddrs(d.To, func(string) bool { return false })
		d.Cc = uniqueAddrs(extraCc, func(a string) bool { return containsFold(d.To, a) })
	}
	if len(d.To) == 0 {
		problems.Add(core.NonFieldErrors, "The original message has no one to reply to.")
	}
	d.bcc = d.addressList(&problems, "bcc", in.Bcc, false)
	d.text, d.html = requireContent(&problems, in)
	return d, problems
}

// Forward sends a message on, quoted below the caller's content, with its
// attachments.
func (s *Sending) Forward(ctx context.Context, p core.Principal, id int64, in SendInput) (core.EmailMessage, error) {
	if err := requireSend(p, nil); err != nil {
		return core.EmailMessage{}, err
	}
	orig, inbox, err := s.original(ctx, p, id)
	if err != nil {
		return core.EmailMessage{}, err
	}
	o, problems, err := s.forwarded(ctx, orig, inbox, in)
	if err != nil {
		return core.EmailMessage{}, err
	}
	return s.queue(ctx, p, o, in.AttachmentIDs, &problems, s.now(), nil)
}

// forwarded is orig sent on from inbox, with its attachments.
func (s *Sending) forwarded(ctx context.Context, orig core.EmailMessage, inbox core.Inbox, in SendInput) (outgoing, core.Problems, error) {
	var problems core.Problems
	d := outgoing{inbox: inbox, Header: replyHeader(orig, core.ForwardSubject(orig.Subject)), names: map[string]string{}}
	d.To = d.addressList(&problems, "to_email", in.To, true)
	d.Cc = d.addressList(&problems, "cc", in.Cc, false)
	d.bcc = d.addressList(&problems, "bcc", in.Bcc, false)
	text, htmlBody := requireContent(&problems, in)
	header := forwardHeader(orig)
	d.text = text + "\n\n" + header + "\n\n" + orig.Text
	if htmlBody != "" || orig.HTML != "" {
		if htmlBody == "" {
			htmlBody = "<p>" + strings.ReplaceAll(html.EscapeString(text), "\n", "<br>") + "</p>"
		}
		origHTML := orig.HTML
		if origHTML == "" {
			origHTML = "<pre>" + html.EscapeString(orig.Text) + "</pre>"
		}
		d.html = htmlBody + "<br><br><div>" + strings.ReplaceAll(html.EscapeString(header), "\n", "<br>") + "</div><br>" + origHTML
	}
	if len(orig.Attachments) > 0 {
		parts, err := s.reading.sourceParts(ctx, orig.AccountID, orig.ID)
		if err != nil {
			return d, problems, err
		}
		for i, a := range orig.Attachments {
			full := ports.AttachmentContent{Attachment: a, InSource: true, Position: i}
			if err := fillFromSource(&full, parts); err != nil {
				return d, problems, err
			}
			d.attachments = append(d.attachments, full)
		}
	}
	return d, problems, nil
}

func forwardHeader(m core.EmailMessage) string {
	from := m.FromEmail
	if m.FromName != "" {
		from = m.FromName + " <" + m.FromEmail + ">"
	}
	lines := []string{"---------- Forwarded message ---------", "From: " + from,
		"Date: " + m.CreatedAt.Format("Mon, 2 Jan 2006 15:04:05 -0700"), "Subject: " + m.Subject, "To: " + strings.Join(m.To, ", ")}
	if len(m.Cc) > 0 {
		lines = append(lines, "Cc: "+strings.Join(m.Cc, ", "))
	}
	return strings.Join(lines, "\n")
}

// replyHeader starts the header of a reply to (or forward of) m.
func replyHeader(m core.EmailMessage, subject string) core.Header {
	return core.Header{Subject: subject, InReplyTo: m.MessageID, References: threadRefs(m)}
}

// maxReferences bounds the References header of our replies.
const maxReferences = 20

// threadRefs is the References of a reply to m (RFC 5322 §3.6.4): m's own
// References, or failing those its In-Reply-To, then m itself.
func threadRefs(m core.EmailMessage) []string {
	parent := m.References
	if len(parent) == 0 && m.InReplyTo != "" {
		parent = []string{m.InReplyTo}
	}
	refs := append(append([]string(nil), parent...), m.MessageID)
	if len(refs) > maxReferences {
		refs = append(refs[:1:1], refs[len(refs)-maxReferences+1:]...) // keep the root
	}
	return refs
}

// original is a message to answer and the inbox it sits in.
func (s *Sending) original(ctx context.Context, p core.Principal, id int64) (core.EmailMessage, core.Inbox, error) {
	m, err := s.reading.Message(ctx, p, id)
	if err != nil {
		return m, core.Inbox{}, err
	}
	in, err := s.inboxes.inboxByID(ctx, m.InboxID)
	return m, in, err
}

// sendingInbox picks the inbox a new message leaves from (spec §4 rules 3, 4).
func (s *Sending) sendingInbox(ctx context.Context, p core.Principal, requested string, inboxID int64) (core.Inbox, error) {
	if inboxID != 0 {
		in, err := s.inboxes.Inbox(ctx, p, inboxID)
		if err == nil && requested != "" && in.IdentityID != requested {
			err = core.NotFound("Inbox not found.")
		}
		return in, err
	}
	if requested == "" && p.IsManagement() {
		return core.Inbox{}, core.Invalid(core.NonFieldErrors, "A management key must pass identity or inbox.")
	}
	ident, err := s.identities.selected(ctx, p, requested)
	if err != nil {
		return core.Inbox{}, err
	}
	return s.inboxes.inboxAt(ctx, ident.Inbox)
}

// addressList checks a list of recipients, each a bare address or "Name
// <address>", and keeps their names; required lists need one.
func (d *outgoing) addressList(problems *core.Problems, field string, addrs []string, required bool) []string {
	if required && len(addrs) == 0 {
		problems.Add(field, "This field is required.")
		return nil
	}
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		name, email, err := core.NormalizeMailbox(field, a)
		if err != nil {
			if hidden := core.CheckVisible(field, a); hidden != nil {
				problems.Merge(hidden) // the reason, rather than a quote that hides it
			} else {
				problems.Add(field, "%q is not a valid email address.", a)
			}
			continue
		}
		if name != "" {
			d.names[strings.ToLower(email)] = name
		}
		out = append(out, email)
	}
	return uniqueAddrs(out, func(string) bool { return false })
}

// mailboxes writes addrs for the message header, with their names.
func (d *outgoing) mailboxes(addrs []string) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a
		if name := d.names[strings.ToLower(a)]; name != "" {
			out[i] = (&mail.Address{Name: name, Address: a}).String()
		}
	}
	return out
}

func checkSubject(problems *core.Problems, subject string) string {
	switch {
	case core.HasLineBreak(subject):
		problems.Add("subject", "Line breaks are not allowed.")
	case len(subject) > maxSubjectLength:
		problems.Add("subject", "Ensure this field has no more than %d characters.", maxSubjectLength)
	}
	return subject
}

func requireContent(problems *core.Problems, in SendInput) (string, string) {
	if in.Content == nil {
		problems.Add("content", "This field is required.")
		return "", in.HTML
	}
	return *in.Content, in.HTML
}

// uniqueAddrs drops repeats (ignoring case) and addresses drop says to.
func uniqueAddrs(addrs []string, drop func(string) bool) []string {
	var out []string
	for _, a := range addrs {
		if a != "" && !drop(a) && !containsFold(out, a) {
			out = append(out, a)
		}
	}
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// prepare adds the uploaded attachments to d and reports every problem of
// the message: what a draft is checked for before it is kept.
func (s *Sending) prepare(ctx context.Context, p core.Principal, d *outgoing, uploadIDs []string, problems *core.Problems) error {
	for _, id := range uploadIDs {
		a, err := s.reading.Attachment(ctx, p, id)
		if isNotFound(err) || err == nil && a.IdentityID != d.inbox.IdentityID {
			problems.Add("attachment_uuids", "Unknown attachment %q.", id)
			continue
		}
		if err != nil {
			return err
		}
		d.attachments = append(d.attachments, a)
	}
	if len(d.attachments) > maxAttachments {
		problems.Add("attachment_uuids", "A message may carry at most %d attachments.", maxAttachments)
	}
	if len(d.To)+len(d.Cc)+len(d.bcc) > maxRecipients {
		problems.Add(core.NonFieldErrors, "A message may have at most %d recipients.", maxRecipients)
	}
	return problems.Err()
}

// queue composes d and stores it as outgoing, queued for delivery at `at`
// in the same transaction; from is the draft it was made from, deleted
// with it, or nil.
func (s *Sending) queue(ctx context.Context, p core.Principal, d outgoing, uploadIDs []string, problems *core.Problems, at time.Time, from *core.Draft) (core.EmailMessage, error) {
	if err := s.prepare(ctx, p, &d, uploadIDs, problems); err != nil {
		return core.EmailMessage{}, err
	}
	byField := map[string][]string{"to_email": d.To, "cc": d.Cc, "bcc": d.bcc}
	if err := s.rules.checkRecipients(ctx, d.inbox.AccountID, d.inbox.IdentityID, core.RuleEmail, byField); err != nil {
		return core.EmailMessage{}, err
	}
	if err := s.gate.allow(ctx, d.inbox.AccountID, core.ActSendMail); err != nil {
		return core.EmailMessage{}, err
	}
	if err := s.suppressions.refused(ctx, d.inbox.AccountID, byField); err != nil {
		return core.EmailMessage{}, err
	}
	// The identity's name is the sender's display name.
	ident, err := s.identities.lookup(ctx, d.inbox.AccountID, d.inbox.IdentityID)
	if err != nil {
		return core.EmailMessage{}, err
	}
	now := s.now()
	d.MessageID, d.FromEmail = s.ids.NewUUID()+"@"+domainOf(d.inbox.Email), d.inbox.Email
	// The message carries the identity's name as the sender's and the
	// recipients' names; the stored copy keeps bare addresses.
	header := d.Header
	header.FromName, header.To, header.Cc = ident.Name, d.mailboxes(d.To), d.mailboxes(d.Cc)
	out := ports.OutgoingMail{Header: header, Date: at, Text: d.text, HTML: d.html}
	// The composer puts the parts the HTML shows beside it, inline, ahead
	// of the attachments; the records say so and follow the message's order.
	for i, a := range d.attachments {
		d.attachments[i].Inline = a.Inline || core.ShownInline(d.html, a.ContentID, a.Inline)
	}
	sort.SliceStable(d.attachments, func(i, j int) bool {
		shown := func(a ports.AttachmentContent) bool { return core.ShownInline(d.html, a.ContentID, a.Inline) }
		return shown(d.attachments[i]) && !shown(d.attachments[j])
	})
	size := len(d.text) + len(d.html)
	for _, a := range d.attachments {
		out.Attachments = append(out.Attachments, ports.MailPart{Filename: a.Filename, ContentType: a.ContentType,
			ContentID: a.ContentID, Inline: a.Inline, Content: a.Content})
		size += len(a.Content)
	}
	if int64(size) > s.maxBytes {
		return core.EmailMessage{}, core.TooLarge("The message is larger than %d bytes.", s.maxBytes)
	}
	raw, err := s.composer.Compose(out)
	if err != nil {
		return core.EmailMessage{}, fmt.Errorf("composing: %w", err)
	}
	// Signed once, as it is queued: the stored source is what every
	// attempt sends, so retries send the same signed bytes.
	domain := domainOf(d.inbox.Email)
	if raw, err = s.domains.Sign(ctx, domain, raw); err != nil {
		return core.EmailMessage{}, fmt.Errorf("signing: %w", err)
	}
	// What is sent is the encoded message (base64 adds a third to every
	// attachment): that is what the size limit, ours and every receiver's,
	// applies to.
	if int64(len(raw)) > s.maxBytes {
		return core.EmailMessage{}, core.TooLarge("The encoded message is %d bytes, larger than the %d allowed (CALLSIGN_SMTP_MAX_BYTES).", len(raw), s.maxBytes)
	}
	token, err := core.NewBounceToken(s.random)
	if err != nil {
		return core.EmailMessage{}, err
	}
	threadID, err := core.NewThreadID(s.random, at)
	if err != nil {
		return core.EmailMessage{}, err
	}
	recipients := uniqueAddrs(append(append(append([]string(nil), d.To...), d.Cc...), d.bcc...), func(string) bool { return false })
	m := core.EmailMessage{AccountID: d.inbox.AccountID, IdentityID: d.inbox.IdentityID, InboxID: d.inbox.ID, Header: d.Header,
		Bcc: d.bcc, Text: d.text, HTML: d.html, Direction: core.Outgoing, IsRead: true, DeliveryStatus: core.DeliveryQueued,
		Recipients: core.NewRecipients(recipients), BounceToken: token, CreatedAt: now}
	// The envelope sender names the message, so that a bounce finds it.
	nm := ports.NewMail{Message: m, NewThreadID: threadID, Raw: raw, FromDraft: from,
		Outbox: &ports.OutboxEntry{AccountID: m.AccountID, EnvelopeFrom: core.BounceAddress(token, domain),
			Recipients: recipients, NextAttempt: at}}
	// The composed source carries the bytes; the records point into it.
	for i, a := range d.attachments {
		a.ID, a.MessageID, a.CreatedAt = s.ids.NewUUID(), 0, now
		a.Size, a.InSource, a.Position, a.Content = int64(len(a.Content)), true, i, nil
		nm.Attachments = append(nm.Attachments, a)
	}
	return s.outbox.enqueue(ctx, nm)
}

// Upload stores a file to attach to a message later.
func (s *Sending) Upload(ctx context.Context, p core.Principal, requested, filename, contentType string, content []byte) (core.Attachment, error) {
	ident, err := s.identities.selected(ctx, p, requested)
	if err != nil {
		return core.Attachment{}, err
	}
	if int64(len(content)) > s.maxBytes {
		return core.Attachment{}, core.TooLarge("The file is larger than %d bytes.", s.maxBytes)
	}
	filename = strings.TrimSpace(filename)
	if filename == "" || core.HasLineBreak(filename) || len(filename) > 255 {
		return core.Attachment{}, core.Invalid("file", "The file needs a name of at most 255 characters on one line.")
	}
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	if err := s.gate.allow(ctx, p.AccountID, core.ActUpload); err != nil {
		return core.Attachment{}, err
	}
	a := core.Attachment{ID: s.ids.NewUUID(), AccountID: p.AccountID, IdentityID: ident.ID, Filename: filename,
		ContentType: contentType, Size: int64(len(content)), CreatedAt: s.now()}
	return a, s.uploads.SaveUpload(ctx, ports.AttachmentContent{Attachment: a, Content: content})
}
