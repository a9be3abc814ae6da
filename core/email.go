package core

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Direction says which way a message went.
type Direction string

const (
	Incoming Direction = "incoming"
	Outgoing Direction = "outgoing"
)

// ParseDirection accepts "incoming" and "outgoing".
func ParseDirection(s string) (Direction, bool) {
	switch Direction(s) {
	case Incoming, Outgoing:
		return Direction(s), true
	}
	return "", false
}

// DeliveryStatus is where an outgoing message is on its way out.
type DeliveryStatus string

const (
	DeliveryQueued DeliveryStatus = "queued"
	DeliverySent   DeliveryStatus = "sent"
	DeliveryFailed DeliveryStatus = "failed"
)

// EmailMessage is one stored message, received or sent.
type EmailMessage struct {
	ID         int64
	AccountID  string
	IdentityID string
	InboxID    int64
	ThreadID   string
	Header
	Bcc  []string // outgoing only; never in the message itself
	Text string
	HTML string
	// Truncated says that Text or HTML holds only the start of a body
	// longer than MaxStoredBody; the source keeps the whole message.
	Truncated bool
	// Preview is the start of Text on one line (Preview). A list carries
	// it in place of the bodies (Summary).
	Preview        string
	Direction      Direction
	IsRead         bool
	Attachments    []Attachment
	DeliveryStatus DeliveryStatus // outgoing only
	DeliveryError  string
	// Recipients are an outgoing message's addresses (To, Cc, Bcc) and
	// what became of each.
	Recipients []Recipient
	// BounceToken names an outgoing message in its envelope sender (VERP).
	BounceToken string
	// SourceHash is the hex SHA-256 of the bytes the sender sent, for a
	// message received over SMTP ("" otherwise): a retried delivery of
	// the same bytes is recognised by it (FileMail).
	SourceHash string
	// Authentication is what the checks of a received message found; nil
	// when none ran.
	Authentication *Authentication
	// Verification is the code or link a received message carries
	// (FindVerification, at receipt); nil for none.
	Verification *Verification
	// Labels are the message's labels, sorted (label.go).
	Labels []string
	// Highlights are a search hit's snippets (core.Highlights); nil
	// outside a search.
	Highlights []string
	// Blocked marks received mail an inbound rule refused after it was
	// accepted (an empty envelope sender: judged by its From): stored, kept
	// out of lists, threads and IMAP, and not announced.
	Blocked bool
	// Spam is the spam filter's verdict on a received message; nil when no
	// filter ran (none configured, or it did not answer in time).
	Spam *SpamVerdict
	// IsSpam files the message as spam (JudgeSpam, or the person's word):
	// stored, kept out of lists, threads and the IMAP INBOX (its Junk
	// folder shows it), and announced as email.spam.
	IsSpam    bool
	CreatedAt time.Time
}

// Attachment is a file carried by a message, or uploaded to be sent.
type Attachment struct {
	ID          string // uuid
	AccountID   string
	IdentityID  string
	MessageID   int64 // 0 for an upload not yet sent
	Filename    string
	ContentType string
	Size        int64
	Inline      bool
	ContentID   string
	CreatedAt   time.Time
}

// ShownInline reports whether a part with contentID belongs beside html in
// a multipart/related (RFC 2387): it is marked inline, or the HTML refers to
// it (cid:, RFC 2392, in any case) whatever its disposition says. Without
// HTML or a Content-ID nothing can show it.
func ShownInline(html, contentID string, inline bool) bool {
	if html == "" || contentID == "" {
		return false
	}
	return inline || strings.Contains(strings.ToLower(html), "cid:"+strings.ToLower(contentID))
}

// PreviewLength is how many characters of the text body a summary shows.
const PreviewLength = 200

// PreviewHead is how many characters of a stored text body a list reads
// to make a preview: enough for PreviewLength characters after white
// space is folded, whatever the body's length.
const PreviewHead = 1024

// MaxMessageParts bounds the MIME parts (at any depth, the message itself
// counted) of a message received or sent: reading and forwarding then
// cost memory bounded by a message's size, not by how finely it is cut.
const MaxMessageParts = 500

// MaxStoredBody bounds, in bytes, the text and the HTML body stored with a
// message (each), so that reading one message costs a bounded amount of
// memory whatever was sent; the raw source is kept whole.
const MaxStoredBody = 1 << 20

// BoundBodies cuts Text and HTML to MaxStoredBody bytes each (at a
// character boundary) and sets Truncated when it cut anything.
func (m *EmailMessage) BoundBodies() {
	if len(m.Text) > MaxStoredBody || len(m.HTML) > MaxStoredBody {
		m.Text, m.HTML, m.Truncated = StoredBody(m.Text), StoredBody(m.HTML), true
	}
}

// StoredBody is a body as a stored message holds it: its first
// MaxStoredBody bytes, cut at a character boundary (BoundBodies).
func StoredBody(s string) string { return cutUTF8(s, MaxStoredBody) }

// Summary is m as a list shows it: its Preview in place of its bodies, so
// that a page of messages costs memory bounded by its length, not by what
// the messages hold.
func (m EmailMessage) Summary() EmailMessage {
	m.Preview = Preview(m.Text)
	m.Text, m.HTML = "", ""
	return m
}

// Preview is the start of a text body on one line: runs of white space
// become one space. It reads only as far as it needs, and copies runs of
// ASCII at once: a list page makes fifty of these (issue 12).
func Preview(text string) string {
	var b strings.Builder
	b.Grow(min(len(text), PreviewLength)) // room for ASCII; other text grows it

	n, space := 0, false // n: characters written
	for i := 0; i < len(text) && n < PreviewLength; {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:]) // an invalid byte: U+FFFD, as ranging over text gives
		}
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			i += size
			continue
		case space:
			b.WriteByte(' ')
			space = false
			if n++; n == PreviewLength {
				continue
			}
		}
		if r >= utf8.RuneSelf {
			b.WriteRune(r)
			n, i = n+1, i+size
			continue
		}
		// A run copied as it stands: ASCII with no white space but single
		// spaces between characters.
		j := i + 1
		for j < len(text) && n+j-i < PreviewLength &&
			(asciiNonSpace(text[j]) || text[j] == ' ' && j+1 < len(text) && asciiNonSpace(text[j+1])) {
			j++
		}
		b.WriteString(text[i:j])
		n, i = n+j-i, j
	}
	return b.String()
}

// asciiNonSpace reports whether c is ASCII and not white space (every
// ASCII white space character is at most ' ').
func asciiNonSpace(c byte) bool { return c > ' ' && c < utf8.RuneSelf }

// replyPrefixes are the reply and forward markers mail clients put in front
// of a subject, in several languages, compared case-insensitively.
var replyPrefixes = []string{"re:", "fwd:", "fw:", "aw:", "wg:", "sv:", "vs:", "antw:"}

// BaseSubject strips every leading reply or forward marker ("Re: Fwd: RE: x" → "x").
func BaseSubject(subject string) string {
	s := strings.TrimSpace(subject)
	for {
		lower := strings.ToLower(s)
		stripped := false
		for _, p := range replyPrefixes {
			if strings.HasPrefix(lower, p) {
				s = strings.TrimSpace(s[len(p):])
				stripped = true
				break
			}
		}
		if !stripped {
			return s
		}
	}
}

// ReplySubject is the subject of a reply: one "Re: ", never stacked.
func ReplySubject(original string) string { return "Re: " + BaseSubject(original) }

// ForwardSubject is the subject of a forward: one "Fwd: ", never stacked.
func ForwardSubject(original string) string { return "Fwd: " + BaseSubject(original) }

// HasLineBreak reports whether s could end a header early.
func HasLineBreak(s string) bool { return strings.ContainsAny(s, "\r\n") }
