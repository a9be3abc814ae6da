package ports

import (
	"context"
	"time"
)

// ParsedMail is what a parser could read from a raw RFC 5322 message. Broken
// mail still parses: what could not be read is left empty and described in
// Problems.
type ParsedMail struct {
	MessageID  string   // without angle brackets; "" when the header is missing
	InReplyTo  string   // without angle brackets
	References []string // without angle brackets, oldest first
	FromEmail  string   // bare address, "" when missing or unreadable
	FromName   string   // display name, decoded to UTF-8
	To         []string // bare addresses
	Cc         []string
	Subject    string // decoded to UTF-8 (RFC 2047)
	Date       time.Time
	Text       string // the text body in UTF-8; derived from the HTML when there is no text part
	HTML       string // the HTML body in UTF-8
	// Attachments holds attachments and inline parts, in message order.
	Attachments []MailPart
	// Problems lists what could not be read (a bad boundary, an unknown charset…).
	Problems []string
}

// MailPart is an attachment or an inline part.
type MailPart struct {
	Filename    string
	ContentType string // media type without parameters, e.g. "image/png"
	ContentID   string // without angle brackets
	Inline      bool
	Content     []byte // decoded
}

// MailParser reads inbound mail.
type MailParser interface {
	// Parse reads raw. It fails only when nothing at all can be read (the
	// bytes are not a message); broken parts are reported in Problems.
	Parse(raw []byte) (ParsedMail, error)
}

// OutgoingMail is a message to compose.
type OutgoingMail struct {
	FromEmail  string
	FromName   string
	To         []string // each a bare address or "Name <address>"
	Cc         []string // the same; Bcc recipients never appear in the message itself
	Subject    string
	Text       string
	HTML       string // optional alternative to Text
	MessageID  string // without angle brackets
	InReplyTo  string // without angle brackets
	References []string
	Date       time.Time
	// Attachments in message order; with HTML, inline parts that have a
	// Content-ID go beside it (multipart/related), so they come first.
	Attachments []MailPart
}

// MailComposer writes outbound mail as RFC 5322 bytes.
type MailComposer interface {
	Compose(m OutgoingMail) ([]byte, error)
}

// RelayOutcome is what became of one recipient of a relayed message.
type RelayOutcome struct {
	Recipient string
	Err       error // nil: the relay accepted the message for this recipient
	// Permanent marks an Err that retrying will not cure (a 5xx reply).
	Permanent bool
}

// MailRelay hands messages to the outside world.
type MailRelay interface {
	// Relay offers raw to every recipient in one transaction and reports the
	// outcome per recipient. A failure before any recipient was tried (the
	// relay is down, TLS fails) is reported for every recipient.
	Relay(ctx context.Context, from string, recipients []string, raw []byte) []RelayOutcome
}
