package core

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"time"
)

// This file holds the rules of threads: which thread a message joins, and
// the summary a thread keeps. Stores persist threads and answer the lookup
// the rules need; they decide nothing.

// NewThreadID draws the id of a thread started at now: 16 URL-safe
// characters, as RandomToken's of 12 bytes, of which the first 6 are
// now's milliseconds and the other 6 random. Ids of threads started
// together so begin alike, and their entries in the indexes on thread ids
// (the threads' own and their messages') fall on the same few pages: with
// wholly random ids each new thread dirtied a page of each index of its
// own, which the store's commit writes to its log (issue 12). An id is
// not a secret: every read checks the thread's account.
func NewThreadID(random io.Reader, now time.Time) (string, error) {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16) // the low 48 bits, first
	if _, err := io.ReadFull(random, b[6:]); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Thread is the summary of a conversation in one inbox.
type Thread struct {
	ID         string
	AccountID  string
	IdentityID string
	InboxID    int64
	Subject    string
	Summary
	AttachmentNames []string
	Participants    []string
	// Labels are the union of its messages' labels, sorted.
	Labels []string
	// Highlights are, in a search, the snippets of the thread's newest
	// matching message (Highlights); nil outside a search.
	Highlights []string
}

// Summary is what a thread, or an SMS conversation, tells of its messages.
type Summary struct {
	MessageCount  int
	UnreadCount   int
	Preview       string // of the latest message
	LastMessageAt time.Time
}

// add folds one newly stored message into the summary.
func (s *Summary) add(dir Direction, isRead bool, at time.Time, text string) {
	s.MessageCount++
	if CountsAsUnread(dir, isRead) {
		s.UnreadCount++
	}
	if !at.Before(s.LastMessageAt) {
		s.LastMessageAt = at
		s.Preview = Preview(text)
	}
}

// MessageIndex is what the rules of storing mail look up among the messages
// an inbox holds. A store answers inside the transaction that stores the
// new message, so that its answers still hold when that commits.
type MessageIndex interface {
	// ThreadOf is the thread of the inbox's newest message with the Message-ID.
	ThreadOf(inboxID int64, messageID string) (threadID string, found bool, err error)
	// Received is the inbox's newest incoming message with the Message-ID.
	Received(inboxID int64, messageID string) (m EmailMessage, found bool, err error)
}

// JoinThread decides which thread of its inbox m joins: the thread of
// another copy of m the inbox holds (the sent copy of a message an identity
// sent to its own address), else of the message it answers. That is most
// likely its In-Reply-To, then the newest of its References, so they are
// looked up in that order and the first one the inbox holds wins. found is
// false when m is kin to nothing the inbox holds: then m starts a thread of
// its own (StartThread). Threads never cross inboxes.
func JoinThread(m EmailMessage, index MessageIndex) (threadID string, found bool, err error) {
	for _, ref := range kin(m) {
		if threadID, found, err = index.ThreadOf(m.InboxID, ref); found || err != nil {
			return threadID, found, err
		}
	}
	return "", false, nil
}

// kin lists the Message-IDs whose thread m belongs to, the likeliest
// first: its own, then those it answers.
func kin(m EmailMessage) []string {
	refs := make([]string, 0, len(m.References)+2)
	if m.MessageID != "" {
		refs = append(refs, m.MessageID)
	}
	if m.InReplyTo != "" {
		refs = append(refs, m.InReplyTo)
	}
	for i := len(m.References) - 1; i >= 0; i-- {
		if m.References[i] != "" {
			refs = append(refs, m.References[i])
		}
	}
	return refs
}

// StartThread is the empty thread m starts, under a new id; Add folds m in.
func StartThread(id string, m EmailMessage) Thread {
	return Thread{ID: id, AccountID: m.AccountID, IdentityID: m.IdentityID, InboxID: m.InboxID}
}

// Recount is t with nothing folded in, for folding its messages in again,
// oldest first, after one of them was deleted. Add reads the text of the
// latest message only, so a store may leave the others' text out.
func (t Thread) Recount() Thread {
	return Thread{ID: t.ID, AccountID: t.AccountID, IdentityID: t.IdentityID, InboxID: t.InboxID}
}

// Limits on what a thread summary lists.
const (
	maxThreadParticipants    = 50
	maxThreadAttachmentNames = 50
)

// Add folds a newly stored message into the thread's summary: counts, the
// latest preview and time, everyone involved and every attachment name.
func (t *Thread) Add(m EmailMessage) {
	if m.Blocked || m.IsSpam {
		return // blocked mail and spam are no part of a thread's summary
	}
	if t.MessageCount == 0 && t.Subject == "" {
		t.Subject = m.Subject
	}
	t.Summary.add(m.Direction, m.IsRead, m.CreatedAt, m.Text)
	for _, p := range append(append([]string{m.FromEmail}, m.To...), m.Cc...) {
		t.Participants = addUniqueFold(t.Participants, p, maxThreadParticipants)
	}
	for _, a := range m.Attachments {
		t.AttachmentNames = addUniqueFold(t.AttachmentNames, a.Filename, maxThreadAttachmentNames)
	}
}

// addUniqueFold appends s unless list has it (ignoring case), is full, or s is empty.
func addUniqueFold(list []string, s string, limit int) []string {
	if s == "" || len(list) >= limit {
		return list
	}
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return list
		}
	}
	return append(list, s)
}

// CountsAsUnread reports whether a message counts in the unread count of
// its Summary: only unread received ones do.
func CountsAsUnread(dir Direction, isRead bool) bool { return dir == Incoming && !isRead }

// UnreadDelta is how the unread count of a message's summary moves when its
// read flag goes from wasRead to read: -1, +1, or 0 when nothing changes
// for the count (the flag stays, or the message is one we sent).
func UnreadDelta(dir Direction, wasRead, read bool) int {
	return b2i(CountsAsUnread(dir, read)) - b2i(CountsAsUnread(dir, wasRead))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
