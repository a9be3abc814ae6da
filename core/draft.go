package core

import "time"

// DraftKind is what a draft becomes when it is sent.
type DraftKind string

const (
	DraftCompose  DraftKind = "compose"
	DraftReply    DraftKind = "reply"
	DraftReplyAll DraftKind = "reply-all"
	DraftForward  DraftKind = "forward"
)

// MaxScheduleAhead bounds how far ahead a draft's send_at may lie.
const MaxScheduleAhead = 366 * 24 * time.Hour

// Draft is a message kept unsent: the body of compose (or of a reply or
// forward of OriginalID), sent later by POST …/send/, at once or at
// SendAt. A draft written by a key that may not send awaits approval.
type Draft struct {
	ID         string // uuid
	AccountID  string
	IdentityID string
	InboxID    int64
	Kind       DraftKind
	// OriginalID is the message a reply or forward answers; 0 for compose,
	// and 0 too when that message was deleted after the draft was made.
	OriginalID  int64
	To, Cc, Bcc []string
	Subject     *string
	Content     *string
	HTML        string
	// Preview is the start of Content on one line, set by Summary in place
	// of the bodies.
	Preview       string
	AttachmentIDs []string
	SendAt        *time.Time
	// AwaitingApproval is set when a key without send rights wrote the
	// draft; only a management key sends it then.
	AwaitingApproval bool
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Summary is d as a list shows it: its Preview in place of its bodies, so
// that a page costs memory bounded by its length, as for messages. The
// store may give it only the head of Content (PreviewHead characters).
func (d Draft) Summary() Draft {
	if d.Content != nil {
		d.Preview = Preview(*d.Content)
	}
	d.Content, d.HTML = nil, ""
	return d
}

// CheckSendAt checks a draft's send time against now: not in the past, and
// not more than MaxScheduleAhead ahead.
func CheckSendAt(problems *Problems, at *time.Time, now time.Time) {
	switch {
	case at == nil:
	case at.Before(now):
		problems.Add("send_at", "This time has passed; give a time in the future, or none to send at once.")
	case at.Sub(now) > MaxScheduleAhead:
		problems.Add("send_at", "A message may be scheduled at most %d days ahead.", int(MaxScheduleAhead/(24*time.Hour)))
	}
}

// SendTime is when a draft sent now leaves: at its SendAt, or now when
// that is unset or has passed (an approval may come late).
func (d Draft) SendTime(now time.Time) time.Time {
	if d.SendAt != nil && d.SendAt.After(now) {
		return *d.SendAt
	}
	return now
}
