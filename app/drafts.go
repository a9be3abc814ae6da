package app

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// DraftInput is what a caller writes to make a draft: the body of compose,
// a time to send at, and for a reply or forward the message it answers.
type DraftInput struct {
	SendInput
	SendAt *time.Time
	// ReplyTo or ForwardOf (not both) make a reply or forward of that
	// message; ReplyAll makes a reply go to every recipient.
	ReplyTo, ForwardOf int64
	ReplyAll           bool
}

// CreateDraft keeps a message unsent, checked as compose (or reply,
// reply-all, forward) checks it; allow and block rules are asked when it
// is sent. A draft of a key that may not send awaits approval. A new
// message leaves from the inbox compose would pick; a reply or forward
// from the original's.
func (s *Sending) CreateDraft(ctx context.Context, p core.Principal, requested string, inboxID int64, in DraftInput) (core.Draft, error) {
	now := s.now()
	d := core.Draft{ID: s.ids.NewUUID(), AccountID: p.AccountID, Kind: core.DraftCompose, To: in.To, Cc: in.Cc, Bcc: in.Bcc,
		Subject: in.Subject, Content: in.Content, HTML: in.HTML, AttachmentIDs: in.AttachmentIDs, SendAt: in.SendAt,
		CreatedAt: now, UpdatedAt: now}
	switch {
	case in.ReplyTo != 0 && in.ForwardOf != 0:
		return core.Draft{}, core.Invalid("forward_of", "Give reply_to or forward_of, not both.")
	case in.ReplyAll && in.ReplyTo == 0:
		return core.Draft{}, core.Invalid("reply_all", "reply_all needs reply_to.")
	case in.ReplyTo != 0:
		d.Kind, d.OriginalID = core.DraftReply, in.ReplyTo
		if in.ReplyAll {
			d.Kind = core.DraftReplyAll
		}
	case in.ForwardOf != 0:
		d.Kind, d.OriginalID = core.DraftForward, in.ForwardOf
	}
	var inbox core.Inbox
	var err error
	if d.OriginalID != 0 {
		_, inbox, err = s.draftOriginal(ctx, p, d)
		if err == nil && requested != "" && inbox.IdentityID != requested {
			err = core.Invalid(originalField(d.Kind), "Message not found.")
		}
	} else {
		inbox, err = s.sendingInbox(ctx, p, requested, inboxID)
	}
	if err != nil {
		return core.Draft{}, err
	}
	d.IdentityID, d.InboxID = inbox.IdentityID, inbox.ID
	if err := s.checkDraft(ctx, p, d, now, true); err != nil {
		return core.Draft{}, err
	}
	if err := s.gate.allow(ctx, p.AccountID, core.ActSaveDraft); err != nil {
		return core.Draft{}, err
	}
	d.AwaitingApproval = !p.MaySend()
	if err := s.drafts.CreateDraft(ctx, d); err != nil {
		return core.Draft{}, err
	}
	return d, nil
}

// Draft is one draft in the caller's scope.
func (s *Sending) Draft(ctx context.Context, p core.Principal, id string) (core.Draft, error) {
	d, err := s.drafts.Draft(ctx, p.AccountID, id)
	if err == nil && !p.Scope("").Allows(d.AccountID, d.IdentityID) {
		err = core.NotFound("Draft not found.")
	}
	return d, err
}

// Drafts lists the drafts in scope, oldest first; awaiting, when set, keeps
// those that do (or do not) await approval.
func (s *Sending) Drafts(ctx context.Context, p core.Principal, requested string, awaiting *bool, page ports.Page) ([]core.Draft, int, error) {
	return s.drafts.Drafts(ctx, ports.DraftFilter{Scope: p.Scope(requested), AwaitingApproval: awaiting, Page: page})
}

// UpdateDraft changes a draft by edit (the fields a caller sent), and
// checks it again; its send_at only when it changed, so that a draft whose
// time passed while it waited can still be edited (it is sent at once).
// A key that may not send leaves it awaiting approval. Its kind, original
// and inbox stay.
func (s *Sending) UpdateDraft(ctx context.Context, p core.Principal, id string, edit func(*core.Draft)) (core.Draft, error) {
	d, err := s.Draft(ctx, p, id)
	if err != nil {
		return core.Draft{}, err
	}
	was := d.SendAt
	edit(&d)
	now := s.now()
	sendAtChanged := (was == nil) != (d.SendAt == nil) || was != nil && !was.Equal(*d.SendAt)
	if err := s.checkDraft(ctx, p, d, now, sendAtChanged); err != nil {
		return core.Draft{}, err
	}
	if err := s.gate.allow(ctx, p.AccountID, core.ActSaveDraft); err != nil {
		return core.Draft{}, err
	}
	d.AwaitingApproval = d.AwaitingApproval || !p.MaySend()
	d.UpdatedAt = now
	return d, s.drafts.UpdateDraft(ctx, d)
}

// DeleteDraft discards a draft.
func (s *Sending) DeleteDraft(ctx context.Context, p core.Principal, id string) error {
	if _, err := s.Draft(ctx, p, id); err != nil {
		return err
	}
	return s.drafts.DeleteDraft(ctx, p.AccountID, id)
}

// SendDraft queues the message a draft makes, to leave at once or at its
// send_at (the outbox holds it until then), and deletes the draft in the
// same transaction: of two sends of one draft, one sends and the other
// finds no draft. For a draft awaiting approval this is the approval, and
// only a management key may give it.
func (s *Sending) SendDraft(ctx context.Context, p core.Principal, id string) (core.EmailMessage, error) {
	return s.sendDraft(ctx, p, id, nil)
}

// ApproveDraft sends a draft as a person read it: seen is the draft's
// UpdatedAt when it was shown. Its writer may edit it while it awaits
// approval, so one changed since is a conflict, not what was approved.
func (s *Sending) ApproveDraft(ctx context.Context, p core.Principal, id string, seen time.Time) (core.EmailMessage, error) {
	return s.sendDraft(ctx, p, id, &seen)
}

func (s *Sending) sendDraft(ctx context.Context, p core.Principal, id string, seen *time.Time) (core.EmailMessage, error) {
	d, err := s.Draft(ctx, p, id)
	if err != nil {
		return core.EmailMessage{}, err
	}
	// Microseconds: what the stores keep and the console shows.
	if seen != nil && d.UpdatedAt.UnixMicro() != seen.UnixMicro() {
		return core.EmailMessage{}, core.Conflict("This draft was changed after you read it; read it again before approving it.")
	}
	if err := requireSend(p, &d); err != nil {
		return core.EmailMessage{}, err
	}
	o, problems, err := s.draftMessage(ctx, p, d)
	if err != nil {
		return core.EmailMessage{}, err
	}
	return s.queue(ctx, p, o, d.AttachmentIDs, &problems, d.SendTime(s.now()), &d)
}

// checkDraft reports every problem of d as its send would, but for the
// allow and block rules, the account's limits and suppressions, which are
// asked when it is sent; and its send_at, when checkSendAt says to.
func (s *Sending) checkDraft(ctx context.Context, p core.Principal, d core.Draft, now time.Time, checkSendAt bool) error {
	o, problems, err := s.draftMessage(ctx, p, d)
	if err != nil {
		return err
	}
	if checkSendAt {
		core.CheckSendAt(&problems, d.SendAt, now)
	}
	return s.prepare(ctx, p, &o, d.AttachmentIDs, &problems)
}

// draftMessage is the message d makes, built as compose, reply or forward
// builds it, with the problems found.
func (s *Sending) draftMessage(ctx context.Context, p core.Principal, d core.Draft) (outgoing, core.Problems, error) {
	in := SendInput{To: d.To, Cc: d.Cc, Bcc: d.Bcc, Subject: d.Subject, Content: d.Content, HTML: d.HTML, AttachmentIDs: d.AttachmentIDs}
	if d.Kind == core.DraftCompose {
		inbox, err := s.inboxes.inboxByID(ctx, d.InboxID)
		o, problems := composed(inbox, in)
		return o, problems, err
	}
	orig, inbox, err := s.draftOriginal(ctx, p, d)
	if err != nil {
		return outgoing{}, core.Problems{}, err
	}
	if d.Kind == core.DraftForward {
		return s.forwarded(ctx, orig, inbox, in)
	}
	o, problems := answered(orig, inbox, in, d.Kind == core.DraftReplyAll)
	return o, problems, nil
}

// draftOriginal is the message a reply or forward draft answers, and its
// inbox; one the caller cannot see, or one deleted since, is a problem of
// the draft's reply_to or forward_of.
func (s *Sending) draftOriginal(ctx context.Context, p core.Principal, d core.Draft) (core.EmailMessage, core.Inbox, error) {
	field := originalField(d.Kind)
	if d.OriginalID == 0 {
		return core.EmailMessage{}, core.Inbox{}, core.Invalid(field, "The message this draft answers was deleted.")
	}
	orig, inbox, err := s.original(ctx, p, d.OriginalID)
	if isNotFound(err) {
		err = core.Invalid(field, "Message not found.")
	}
	return orig, inbox, err
}

// originalField names the field that gave a draft its original.
func originalField(k core.DraftKind) string {
	if k == core.DraftForward {
		return "forward_of"
	}
	return "reply_to"
}
