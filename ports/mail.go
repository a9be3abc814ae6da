package ports

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
)

// ParsedMail is what a parser could read from a raw RFC 5322 message. Broken
// mail still parses: what could not be read is left empty and described in
// Problems.
type ParsedMail struct {
	// Header is what the header says, decoded (RFC 2047) to UTF-8; a field
	// that is missing or unreadable is empty.
	core.Header
	Date time.Time
	Text string // the text body in UTF-8; derived from the HTML when there is no text part
	HTML string // the HTML body in UTF-8
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
	Content     []byte // decoded; nil from MailParser.Describe for a part that is not text
	// Size is how many bytes the part has decoded: len(Content), unless
	// Describe left Content out. Composing ignores it.
	Size int
}

// MailParser reads inbound mail.
type MailParser interface {
	// Parse reads raw. It fails only when nothing at all can be read (the
	// bytes are not a message), or with core.KindTooLarge when raw has more
	// than core.MaxMessageParts parts; broken parts are reported in Problems.
	Parse(raw []byte) (ParsedMail, error)
	// Describe is Parse for those who need only what the parts are: the
	// content of a part that is not text (text/*) is left out (nil), its
	// Size kept, so that a large attachment is not held decoded.
	Describe(raw []byte) (ParsedMail, error)
}

// OutgoingMail is a message to compose. Bcc recipients never appear in
// the message itself, so the header has none.
type OutgoingMail struct {
	// Header is the message's header; To and Cc may give each address
	// with its name ("Name <address>").
	core.Header
	Date time.Time
	Text string
	HTML string // optional alternative to Text
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
	// Reply is the relay's refusal as it sent it ("550 5.1.1 …"); "" when
	// the relay did not answer in SMTP's words.
	Reply string
	// ProviderID is what an HTTP mail provider (SES, Mailgun) calls the
	// accepted message, the handle its delivery events name; "" when the
	// transport gives none (an SMTP relay).
	ProviderID string
}

// MailRelay hands messages to the outside world: an SMTP relay or a mail
// provider's API. Whatever the transport, raw goes out byte for byte, so a
// DKIM signature made when the message was queued still verifies.
type MailRelay interface {
	// Relay offers raw to every recipient in one transaction and reports the
	// outcome per recipient. A failure before any recipient was tried (the
	// relay is down, TLS fails) is reported for every recipient.
	Relay(ctx context.Context, from string, recipients []string, raw []byte) []RelayOutcome
}
