package app

import (
	"context"
	"fmt"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Reading is the mail of inboxes as callers read it: threads, messages,
// their sources and attachments, read flags, and deleting a message
// (spec §4).
type Reading struct {
	base
	messages ports.MailStore
	parser   ports.MailParser // reads attachments out of stored sources
	// changes tells mail clients watching an inbox that its mail changed.
	changes *changeFeed[int64]
	// verified tells callers waiting on an identity's verifications.
	verified *changeFeed[string]
	spam     spamFilter
}

// Watch signals, without blocking, whenever mail of the inboxes is stored
// or marked read by this process, as Mailbox.Watch does for one folder.
// A signal carries nothing but "look again": the caller then reads what
// changed through a scoped call. Other instances' changes are not
// signalled, so a watcher also looks again now and then. Call stop when
// done.
func (s *Reading) Watch(inboxIDs ...int64) (changed <-chan struct{}, stop func()) {
	return s.changes.watch(inboxIDs...)
}

// Threads lists thread summaries in scope, latest activity first: a page
// of them, and their number when the page asks for it. f's scope is the
// principal's, narrowed to the requested identity.
func (s *Reading) Threads(ctx context.Context, p core.Principal, requested string, f ports.ThreadFilter) ([]core.Thread, int, error) {
	f.Scope = p.Scope(requested)
	return s.messages.Threads(ctx, f)
}

// Thread shows a thread and its messages, oldest first.
func (s *Reading) Thread(ctx context.Context, p core.Principal, id string) (core.Thread, []core.EmailMessage, error) {
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
func (s *Reading) Messages(ctx context.Context, p core.Principal, requested string, f ports.MessageFilter) ([]core.EmailMessage, int, error) {
	f.Scope = p.Scope(requested)
	return s.messages.Messages(ctx, f)
}

// Message shows one message in scope.
func (s *Reading) Message(ctx context.Context, p core.Principal, id int64) (core.EmailMessage, error) {
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
func (s *Reading) DeleteMessage(ctx context.Context, p core.Principal, id int64) error {
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

// SetRead marks a message read or unread.
func (s *Reading) SetRead(ctx context.Context, p core.Principal, id int64, read bool) (core.EmailMessage, error) {
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

// Label adds a label to a message in scope (add) or removes it, as
// written (core.ParseLabel folds its case). Adding a label the message
// carries, or removing one it does not, changes nothing and is no error;
// a change writes email.labeled or email.unlabeled, and mail clients
// watching the inbox see the message's keywords change.
func (s *Reading) Label(ctx context.Context, p core.Principal, id int64, label string, add bool) (core.EmailMessage, error) {
	label, err := core.ParseLabel("label", label)
	if err != nil {
		return core.EmailMessage{}, err
	}
	m, err := s.Message(ctx, p, id)
	if err != nil {
		return m, err
	}
	before := len(m.Labels)
	if m, err = s.messages.LabelMessage(ctx, m.AccountID, m.ID, label, add); err != nil {
		return m, err
	}
	if len(m.Labels) != before {
		s.changes.notify(m.InboxID)
	}
	return m, nil
}

// Raw is a message's RFC 5322 source.
func (s *Reading) Raw(ctx context.Context, p core.Principal, id int64) ([]byte, error) {
	if _, err := s.Message(ctx, p, id); err != nil {
		return nil, err
	}
	return s.messages.RawMessage(ctx, p.AccountID, id)
}

// Attachment is an attachment with its bytes, scoped like its message.
func (s *Reading) Attachment(ctx context.Context, p core.Principal, id string) (ports.AttachmentContent, error) {
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
func (s *Reading) sourceParts(ctx context.Context, accountID string, messageID int64) ([]ports.MailPart, error) {
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
