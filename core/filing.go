package core

import "time"

// Filing is what becomes of a message offered to an inbox: it is stored at
// CreatedAt in the thread ThreadID, or, when it is a Duplicate, not stored
// again at all.
type Filing struct {
	// Duplicate, when set, is the copy the inbox already holds.
	Duplicate *EmailMessage
	CreatedAt time.Time
	ThreadID  string
	// NewThread says the message starts ThreadID (StartThread).
	NewThread bool
}

// RedeliveryWindow is how long a sender's retry of the same bytes is
// recognised as a redelivery: senders retry for days, but a copy sent again
// on purpose a day later is kept.
const RedeliveryWindow = 24 * time.Hour

// FileMail decides, inside the transaction that stores m, what becomes of
// it:
//   - with dedupe, a message the inbox already received (the same
//     Message-ID) is that message: a redelivery (a retried local delivery,
//     a resynced IMAP source) makes no copy;
//   - without dedupe, a message received over SMTP (SourceHash set) that
//     the inbox received within RedeliveryWindow with the same Message-ID
//     and the same bytes is that message: the sender retried a delivery
//     whose 250 it did not hear;
//   - its creation time is m.CreatedAt (now), or just after lastCreated, the
//     account's latest, when that is not earlier: times strictly increase per
//     account in commit order, so a created_after cursor neither skips nor
//     repeats a message;
//   - it joins the thread JoinThread finds, or starts newThreadID.
func FileMail(m EmailMessage, dedupe bool, newThreadID string, lastCreated time.Time, index MessageIndex) (Filing, error) {
	if dedupe || m.SourceHash != "" {
		dup, found, err := index.Received(m.InboxID, m.MessageID)
		if err != nil {
			return Filing{}, err
		}
		if found && (dedupe || dup.SourceHash == m.SourceHash && m.CreatedAt.Sub(dup.CreatedAt) < RedeliveryWindow) {
			return Filing{Duplicate: &dup}, nil
		}
	}
	f := Filing{CreatedAt: m.CreatedAt}
	if !f.CreatedAt.After(lastCreated) {
		f.CreatedAt = lastCreated.Add(time.Microsecond)
	}
	threadID, found, err := JoinThread(m, index)
	if err != nil {
		return Filing{}, err
	}
	f.ThreadID, f.NewThread = threadID, !found
	if !found {
		f.ThreadID = newThreadID
	}
	return f, nil
}
