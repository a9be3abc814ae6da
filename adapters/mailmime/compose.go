package mailmime

import (
	"bytes"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Composer implements ports.MailComposer. The zero value is ready and safe
// for concurrent use.
type Composer struct{}

var _ ports.MailComposer = Composer{}

// entity is one MIME entity of a message being composed: a leaf with its
// content, or a multipart with its parts.
type entity struct {
	header  message.Header // Content-* fields
	content []byte
	parts   []entity
}

func multipart(subtype string, parts ...entity) entity {
	e := entity{parts: parts}
	e.header.SetContentType("multipart/"+subtype, nil)
	return e
}

func textEntity(mediaType, content string) entity {
	// The last line ends with a line break, as RFC 5322 has every line end;
	// the parser takes that one away again, so a body reads back as written.
	e := entity{content: []byte(content + "\n")}
	e.header.SetContentType(mediaType, map[string]string{"charset": "utf-8"})
	e.header.Set("Content-Transfer-Encoding", "quoted-printable")
	return e
}

// Compose writes m as RFC 5322 with CRLF line endings. The text is one
// text/plain part, or a multipart/alternative of text and HTML; the parts
// the HTML shows (core.ShownInline) sit with the HTML alone in a
// multipart/related (RFC 2387), inline; attachments make a multipart/mixed
// around all that, in base64. Text is quoted-printable UTF-8; a non-ASCII subject
// and display names are RFC 2047 encoded words, file names RFC 2231
// parameters, cut so that no header line passes 76 characters (fold.go).
// Bcc is not a field of m, so it cannot leak.
//
// It refuses, with a KindInvalid error naming the field, anything that could
// end a header early (CR or LF), an address that is not one mailbox (a bare
// address, or "Name <address>"), a message identifier that does not fit in
// angle brackets, and a zero Date.
func (Composer) Compose(m ports.OutgoingMail) ([]byte, error) {
	h, err := header(m)
	if err != nil {
		return nil, err
	}
	var related, attached []entity
	for i, p := range m.Attachments {
		shown := core.ShownInline(m.HTML, p.ContentID, p.Inline)
		e, err := attachment(p, i+1, shown)
		if err != nil {
			return nil, err
		}
		if shown {
			related = append(related, e)
		} else {
			attached = append(attached, e)
		}
	}
	root := textEntity("text/plain", m.Text)
	if m.HTML != "" {
		root = textEntity("text/html", m.HTML)
		if len(related) > 0 {
			root = multipart("related", append([]entity{root}, related...)...)
		}
		if m.Text != "" {
			root = multipart("alternative", textEntity("text/plain", m.Text), root)
		}
	}
	if len(attached) > 0 {
		root = multipart("mixed", append([]entity{root}, attached...)...)
	}
	for f := root.header.Fields(); f.Next(); {
		h.Set(f.Key(), f.Value())
	}
	var buf bytes.Buffer
	w, err := message.CreateWriter(&buf, h.Header)
	if err != nil {
		return nil, err
	}
	if err := root.write(w); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// write writes e's body (its parts, or its content) to w and closes it.
func (e entity) write(w *message.Writer) error {
	for _, p := range e.parts {
		pw, err := w.CreatePart(p.header)
		if err != nil {
			return err
		}
		if err := p.write(pw); err != nil {
			return err
		}
	}
	if len(e.parts) == 0 {
		if _, err := w.Write(e.content); err != nil {
			return err
		}
	}
	return w.Close()
}

// header checks every value that goes into the message header and sets it.
func header(m ports.OutgoingMail) (mail.Header, error) {
	var h mail.Header
	if m.Date.IsZero() {
		return h, core.Invalid("date", "A date is required.")
	}
	from, err := core.NormalizeEmail("from_email", m.FromEmail)
	if err != nil {
		return h, err
	}
	if core.HasLineBreak(m.FromName) {
		return h, core.Invalid("from_name", "Line breaks are not allowed.")
	}
	if core.HasLineBreak(m.Subject) {
		return h, core.Invalid("subject", "Line breaks are not allowed.")
	}
	to, err := addressFields("to", m.To)
	if err != nil {
		return h, err
	}
	cc, err := addressFields("cc", m.Cc)
	if err != nil {
		return h, err
	}
	if m.MessageID != "" {
		if err := checkIDs("message_id", m.MessageID); err != nil {
			return h, err
		}
	}
	if m.InReplyTo != "" {
		if err := checkIDs("in_reply_to", m.InReplyTo); err != nil {
			return h, err
		}
	}
	if err := checkIDs("references", m.References...); err != nil {
		return h, err
	}

	h.Set("From", mailboxes("From", []*mail.Address{{Name: m.FromName, Address: from}}))
	if len(to) > 0 {
		h.Set("To", mailboxes("To", to))
	}
	if len(cc) > 0 {
		h.Set("Cc", mailboxes("Cc", cc))
	}
	h.Set("Subject", text("Subject", m.Subject))
	h.SetDate(m.Date)
	h.SetMessageID(m.MessageID)
	if m.InReplyTo != "" {
		h.SetMsgIDList("In-Reply-To", []string{m.InReplyTo})
	}
	h.SetMsgIDList("References", m.References)
	return h, nil
}

// addressFields checks that every entry is one mailbox: a bare address or
// "Name <address>".
func addressFields(field string, entries []string) ([]*mail.Address, error) {
	out := make([]*mail.Address, 0, len(entries))
	for _, entry := range entries {
		name, addr := "", entry
		if strings.ContainsRune(entry, '<') && !core.HasLineBreak(entry) {
			if a, err := mail.ParseAddress(entry); err == nil {
				name, addr = a.Name, a.Address
			}
		}
		addr, err := core.NormalizeEmail(field, addr)
		if err != nil {
			return nil, err
		}
		out = append(out, &mail.Address{Name: name, Address: addr})
	}
	return out, nil
}

// checkIDs refuses message identifiers that cannot sit between angle
// brackets: empty, or holding a space, a control character or a bracket.
// UTF-8 is allowed (RFC 6532 §3.2): mail with such identifiers arrives over
// SMTPUTF8, and a reply must be able to name it.
func checkIDs(field string, ids ...string) error {
	for _, id := range ids {
		valid := id != "" && utf8.ValidString(id)
		for i := 0; i < len(id) && valid; i++ {
			valid = id[i] > ' ' && id[i] != 0x7f && id[i] != '<' && id[i] != '>'
		}
		if !valid {
			return core.Invalid(field, "%q is not a valid message identifier.", id)
		}
	}
	return nil
}

// attachment is the n-th part in base64, inline when the HTML shows it or
// it was marked so. It keeps its Content-ID so the HTML can refer to it.
func attachment(p ports.MailPart, n int, shown bool) (entity, error) {
	mediaType := "application/octet-stream"
	if p.ContentType != "" {
		t, _, err := mime.ParseMediaType(p.ContentType)
		if err != nil || core.HasLineBreak(p.ContentType) {
			return entity{}, core.Invalid("attachments", "%q is not a valid content type.", p.ContentType)
		}
		mediaType = t
	}
	if core.HasLineBreak(p.Filename) || core.HasLineBreak(p.ContentID) {
		return entity{}, core.Invalid("attachments", "Line breaks are not allowed.")
	}
	name := fileName(p.Filename, mediaType, n)
	e := entity{content: p.Content}
	e.header.Set("Content-Type", withParams(mediaType, "name", name))
	e.header.Set("Content-Transfer-Encoding", "base64")
	if p.ContentID != "" {
		if err := checkIDs("attachments", p.ContentID); err != nil {
			return entity{}, err
		}
		e.header.Set("Content-Id", "<"+p.ContentID+">")
	}
	disposition := "attachment"
	if p.Inline || shown {
		disposition = "inline"
	}
	e.header.Set("Content-Disposition", withParams(disposition, "filename", name))
	return e, nil
}

// extensions are the file extensions used for made-up attachment names, for
// the types where mime.ExtensionsByType would pick an odd one or none.
var extensions = map[string]string{
	"application/pdf":          ".pdf",
	"application/zip":          ".zip",
	"application/json":         ".json",
	"application/octet-stream": ".bin",
	"image/jpeg":               ".jpg",
	"image/png":                ".png",
	"image/gif":                ".gif",
	"image/webp":               ".webp",
	"image/svg+xml":            ".svg",
	"text/plain":               ".txt",
	"text/html":                ".html",
	"text/csv":                 ".csv",
	"text/calendar":            ".ics",
	"message/rfc822":           ".eml",
}

// extension is the file extension for a media type, ".bin" when unknown.
func extension(mediaType string) string {
	if ext, ok := extensions[mediaType]; ok {
		return ext
	}
	if exts, _ := mime.ExtensionsByType(mediaType); len(exts) > 0 {
		return exts[0]
	}
	return ".bin"
}
