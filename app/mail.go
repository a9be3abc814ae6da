package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Mail is email: inboxes and domains, inbound delivery, reading, sending
// and the outbox (spec §4).
type Mail struct {
	base
	messages ports.MailStore
	inboxes  ports.InboxStore
	outbox   ports.OutboxStore
	drafts   ports.DraftStore // messages kept unsent
	domains  *Domains         // which domains take inboxes and mail, and signing
	// suppressions refuses sending to addresses that bounced, and records them.
	suppressions *Suppressions
	rules        *Rules                  // who an identity may mail and hear from
	mailAuth     ports.MailAuthenticator // checks received mail
	inboundAuth  core.InboundAuth        // which connections are checked
	reports      ports.DSNReader         // reads bounces
	gate         gate                    // new inboxes and sending need an active subscription
	identities   *Identities             // mail is sent, and files uploaded, for an identity
	parser       ports.MailParser
	composer     ports.MailComposer
	relay        ports.MailRelay // nil: no external delivery

	mailDomains []string
	maxBytes    int64 // bounds a message (inbound, composed) and an upload
	retry       RetryPolicy
	lease       time.Duration // how long a claimed outbox entry is ours
	// postmaster is the inbox that receives postmaster@ each platform
	// domain; "" means the service's oldest inbox.
	postmaster string

	// wake nudges the outbox worker after a message is queued.
	wake chan struct{}
	// changes tells mail clients watching an inbox that its mail changed.
	changes changeFeed[int64]
	// verified tells callers waiting on an identity's verifications.
	verified *changeFeed[string]
	// sourcesChanged tells the IMAP source workers that sources went with
	// an inbox.
	sourcesChanged func()
	// known skips recording correspondents recorded moments ago.
	known knownSenders
	// recipients caches ResolveRecipient's answers.
	recipients inboxCache
}

// RetryPolicy spaces out delivery attempts: First, then doubling up to Max,
// until GiveUpAfter has passed since the message was queued.
type RetryPolicy struct {
	First, Max, GiveUpAfter time.Duration
}

// DefaultRetry retries for up to two days, as mail servers customarily do.
var DefaultRetry = RetryPolicy{First: 30 * time.Second, Max: time.Hour, GiveUpAfter: 48 * time.Hour}

// after is the pause before the attempt following `attempts` attempts.
func (p RetryPolicy) after(attempts int) time.Duration {
	d := p.First
	for i := 1; i < attempts && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// inboxAddress checks an address asked for by an account: well formed, and
// on a domain the account may use.
func (s *Mail) inboxAddress(ctx context.Context, accountID, field, addr string) (string, error) {
	email, err := core.NormalizeEmail(field, addr)
	if err != nil {
		return "", err
	}
	local, domain, _ := core.SplitAddress(email)
	if local, err = core.NormalizeLocalPart(field, local); err != nil {
		return "", err
	}
	if err := s.domains.ForInbox(ctx, accountID, field, domain); err != nil {
		return "", err
	}
	return local + "@" + domain, nil
}

// CheckAvailability reports whether an address can be had.
func (s *Mail) CheckAvailability(ctx context.Context, p core.Principal, addr string) (string, bool, error) {
	if strings.TrimSpace(addr) == "" {
		return "", false, core.Invalid("email", "This parameter is required.")
	}
	email, err := s.inboxAddress(ctx, p.AccountID, "email", addr)
	if err != nil {
		return "", false, err
	}
	_, err = s.inboxes.InboxByEmail(ctx, email)
	if isNotFound(err) {
		return email, true, nil
	}
	return email, false, err
}

// CreateInbox gives an identity another address: the one asked for, or one
// generated from the identity's name. It needs an active subscription.
func (s *Mail) CreateInbox(ctx context.Context, p core.Principal, requested, addr string) (core.Inbox, error) {
	ident, err := s.identities.selected(ctx, p, requested)
	if err != nil {
		return core.Inbox{}, err
	}
	if err := s.gate.allow(ctx, p.AccountID, core.ActCreateInbox); err != nil {
		return core.Inbox{}, err
	}
	in := core.Inbox{AccountID: p.AccountID, IdentityID: ident.ID, CreatedAt: s.now()}
	if strings.TrimSpace(addr) != "" {
		if in.Email, err = s.inboxAddress(ctx, p.AccountID, "email", addr); err != nil {
			return core.Inbox{}, err
		}
		in.UUID = s.ids.NewUUID()
		if in.ID, err = s.inboxes.CreateInbox(ctx, in); err != nil {
			if core.KindOf(err) == core.KindConflict {
				return core.Inbox{}, core.Conflict("The address %s is already taken.", in.Email)
			}
			return core.Inbox{}, err
		}
		return in, nil
	}
	for attempt := 1; ; attempt++ {
		local, err := core.GeneratedLocalPart(ident.Name, attempt, s.random)
		if err != nil {
			return core.Inbox{}, err
		}
		in.UUID, in.Email = s.ids.NewUUID(), local+"@"+s.mailDomains[0]
		in.ID, err = s.inboxes.CreateInbox(ctx, in)
		if core.KindOf(err) != core.KindConflict || attempt >= generatedAttempts {
			return in, err
		}
	}
}

// Inboxes lists a page of the inboxes in scope, newest first.
func (s *Mail) Inboxes(ctx context.Context, p core.Principal, requested string, page ports.Page) ([]core.Inbox, int, error) {
	return s.inboxes.Inboxes(ctx, p.Scope(requested), page)
}

// Watch signals, without blocking, whenever mail of the inboxes is stored
// or marked read by this process, as Mailbox.Watch does for one folder.
// A signal carries nothing but "look again": the caller then reads what
// changed through a scoped call. Other instances' changes are not
// signalled, so a watcher also looks again now and then. Call stop when
// done.
func (s *Mail) Watch(inboxIDs ...int64) (changed <-chan struct{}, stop func()) {
	return s.changes.watch(inboxIDs...)
}

// Inbox shows one inbox in scope.
func (s *Mail) Inbox(ctx context.Context, p core.Principal, id int64) (core.Inbox, error) {
	in, err := s.inboxes.Inbox(ctx, id)
	if err != nil {
		return core.Inbox{}, err
	}
	if !p.Scope("").Allows(in.AccountID, in.IdentityID) {
		return core.Inbox{}, core.NotFound("Inbox not found.")
	}
	return in, nil
}

// inboxAt is the inbox with an address, for a caller that checks who may see it.
func (s *Mail) inboxAt(ctx context.Context, email string) (core.Inbox, error) {
	return s.inboxes.InboxByEmail(ctx, email)
}

// inboxByID is an inbox, for a caller that checks who may see it.
func (s *Mail) inboxByID(ctx context.Context, id int64) (core.Inbox, error) {
	return s.inboxes.Inbox(ctx, id)
}

// Threads lists thread summaries in scope, latest activity first: a page
// of them, and their number when the page asks for it. f's scope is the
// principal's, narrowed to the requested identity.
func (s *Mail) Threads(ctx context.Context, p core.Principal, requested string, f ports.ThreadFilter) ([]core.Thread, int, error) {
	f.Scope = p.Scope(requested)
	return s.messages.Threads(ctx, f)
}

// Thread shows a thread and its messages, oldest first.
func (s *Mail) Thread(ctx context.Context, p core.Principal, id string) (core.Thread, []core.EmailMessage, error) {
	t, err := s.messages.Thread(ctx, p.AccountID, id)
	if err != nil {
		return core.Thread{}, nil, err
	}
	if !p.Scope("").Allows(t.AccountID, t.IdentityID) {
		return core.Thread{}, nil, core.NotFound("Thread not found.")
	}
	msgs, _, err := s.messages.Messages(ctx, ports.MessageFilter{Scope: p.Scope(""), ThreadID: id, Limit: maxThreadMessages})
	return t, msgs, err
}

// maxThreadMessages bounds a thread's detail view.
const maxThreadMessages = 1000

// Messages lists messages for cursor polling: oldest first, after the cursor.
func (s *Mail) Messages(ctx context.Context, p core.Principal, requested string, f ports.MessageFilter) ([]core.EmailMessage, int, error) {
	f.Scope = p.Scope(requested)
	return s.messages.Messages(ctx, f)
}

// Message shows one message in scope.
func (s *Mail) Message(ctx context.Context, p core.Principal, id int64) (core.EmailMessage, error) {
	m, err := s.messages.Message(ctx, p.AccountID, id)
	if err != nil {
		return core.EmailMessage{}, err
	}
	if !p.Scope("").Allows(m.AccountID, m.IdentityID) {
		return core.EmailMessage{}, core.NotFound("Message not found.")
	}
	return m, nil
}

// DeleteMessage deletes a message in scope with its source and
// attachments; one still waiting in the outbox is never sent (an attempt
// already under way may still deliver it). Its thread is counted again,
// and mail clients watching the inbox see it expunged.
func (s *Mail) DeleteMessage(ctx context.Context, p core.Principal, id int64) error {
	m, err := s.Message(ctx, p, id)
	if err != nil {
		return err
	}
	if err := s.messages.DeleteMessage(ctx, m.AccountID, m.ID); err != nil {
		return err
	}
	s.changes.notify(m.InboxID)
	s.log.Info("mail deleted", "message", m.ID, "inbox", m.InboxID, "identity", m.IdentityID, "direction", m.Direction)
	return nil
}

// DeleteInbox deletes an inbox in scope with its mail, threads and IMAP
// source; an identity keeps its last inbox (409). Mail to its address is
// refused from then on (550), on other instances within a minute, when
// their cache of addresses forgets it.
func (s *Mail) DeleteInbox(ctx context.Context, p core.Principal, id int64) error {
	in, err := s.Inbox(ctx, p, id)
	if err != nil {
		return err
	}
	if err := s.inboxes.DeleteInbox(ctx, in.AccountID, in.ID); err != nil {
		return err
	}
	s.recipients.forget(in.Email)
	s.changes.notify(in.ID)
	s.sourcesChanged()
	s.log.Info("inbox deleted", "inbox", in.ID, "identity", in.IdentityID)
	return nil
}

// SetRead marks a message read or unread.
func (s *Mail) SetRead(ctx context.Context, p core.Principal, id int64, read bool) (core.EmailMessage, error) {
	m, err := s.Message(ctx, p, id)
	if err != nil {
		return m, err
	}
	if m.IsRead != read {
		if err := s.messages.SetRead(ctx, p.AccountID, id, read); err != nil {
			return m, err
		}
		m.IsRead = read
		s.changes.notify(m.InboxID)
	}
	return m, nil
}

// Raw is a message's RFC 5322 source.
func (s *Mail) Raw(ctx context.Context, p core.Principal, id int64) ([]byte, error) {
	if _, err := s.Message(ctx, p, id); err != nil {
		return nil, err
	}
	return s.messages.RawMessage(ctx, p.AccountID, id)
}

// Attachment is an attachment with its bytes, scoped like its message.
func (s *Mail) Attachment(ctx context.Context, p core.Principal, id string) (ports.AttachmentContent, error) {
	a, err := s.messages.Attachment(ctx, p.AccountID, id)
	if err != nil {
		return a, err
	}
	if !p.Scope("").Allows(a.AccountID, a.IdentityID) {
		return ports.AttachmentContent{}, core.NotFound("Attachment not found.")
	}
	if !a.InSource {
		return a, nil
	}
	parts, err := s.sourceParts(ctx, a.AccountID, a.MessageID)
	if err != nil {
		return a, err
	}
	return a, fillFromSource(&a, parts)
}

// sourceParts reads the attachments of a stored message from its source.
func (s *Mail) sourceParts(ctx context.Context, accountID string, messageID int64) ([]ports.MailPart, error) {
	raw, err := s.messages.RawMessage(ctx, accountID, messageID)
	if err != nil {
		return nil, err
	}
	parsed, err := s.parser.Parse(raw)
	return parsed.Attachments, err
}

// fillFromSource gives a its bytes from its message's parts: the part at its
// position, or failing that (a parser that lists parts otherwise) the one
// with its name and size.
func fillFromSource(a *ports.AttachmentContent, parts []ports.MailPart) error {
	match := func(p ports.MailPart) bool { return p.Filename == a.Filename && int64(len(p.Content)) == a.Size }
	if a.Position < len(parts) && match(parts[a.Position]) {
		a.Content = parts[a.Position].Content
		return nil
	}
	for _, p := range parts {
		if match(p) {
			a.Content = p.Content
			return nil
		}
	}
	return fmt.Errorf("attachment %s (%q) is not in its message's source", a.ID, a.Filename)
}

// Upload stores a file to attach to a message later.
func (s *Mail) Upload(ctx context.Context, p core.Principal, requested, filename, contentType string, content []byte) (core.Attachment, error) {
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
	return a, s.messages.SaveUpload(ctx, ports.AttachmentContent{Attachment: a, Content: content})
}
