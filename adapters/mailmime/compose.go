package mailmime

import (
	"bytes"
	"errors"
	"io"
	"mime"

	"github.com/emersion/go-message/mail"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Composer implements ports.MailComposer. The zero value is ready and safe
// for concurrent use.
type Composer struct{}

var _ ports.MailComposer = Composer{}

// body is one rendering of the message text.
type body struct {
	mediaType string
	content   string
}

// Compose writes m as RFC 5322 with CRLF line endings: a single text/plain
// part, a multipart/alternative of text and HTML, or, with attachments, a
// multipart/mixed holding either of those and the attachments in base64.
// Text is quoted-printable UTF-8; non-ASCII names and the subject are RFC
// 2047 encoded. Bcc is not a field of m, so it cannot leak.
//
// It refuses, with a KindInvalid error naming the field, anything that could
// end a header early (CR or LF), an address that is not a bare address, a
// message identifier that does not fit in angle brackets, and a zero Date.
func (Composer) Compose(m ports.OutgoingMail) ([]byte, error) {
	h, err := header(m)
	if err != nil {
		return nil, err
	}
	bodies := []body{{"text/plain", m.Text}}
	if m.HTML != "" {
		bodies = append(bodies, body{"text/html", m.HTML})
		if m.Text == "" {
			bodies = bodies[1:]
		}
	}

	var buf bytes.Buffer
	switch {
	case len(m.Attachments) > 0:
		err = writeMixed(&buf, h, bodies, m.Attachments)
	case len(bodies) > 1:
		var iw *mail.InlineWriter
		if iw, err = mail.CreateInlineWriter(&buf, h); err == nil {
			err = writeBodies(iw.CreatePart, bodies)
			err = errors.Join(err, iw.Close())
		}
	default:
		err = writeBodies(func(ih mail.InlineHeader) (io.WriteCloser, error) {
			h.Set("Content-Type", ih.Get("Content-Type"))
			return mail.CreateSingleInlineWriter(&buf, h)
		}, bodies)
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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

	h.SetAddressList("From", []*mail.Address{{Name: m.FromName, Address: from}})
	h.SetAddressList("To", to)
	h.SetAddressList("Cc", cc)
	h.SetSubject(m.Subject)
	h.SetDate(m.Date)
	h.SetMessageID(m.MessageID)
	if m.InReplyTo != "" {
		h.SetMsgIDList("In-Reply-To", []string{m.InReplyTo})
	}
	h.SetMsgIDList("References", m.References)
	return h, nil
}

// addressFields checks that every entry is a bare address.
func addressFields(field string, addrs []string) ([]*mail.Address, error) {
	out := make([]*mail.Address, 0, len(addrs))
	for _, a := range addrs {
		addr, err := core.NormalizeEmail(field, a)
		if err != nil {
			return nil, err
		}
		out = append(out, &mail.Address{Address: addr})
	}
	return out, nil
}

// checkIDs refuses message identifiers that cannot sit between angle
// brackets: empty, or holding a space, a control character, a bracket or
// anything outside printable ASCII.
func checkIDs(field string, ids ...string) error {
	for _, id := range ids {
		valid := id != ""
		for i := 0; i < len(id) && valid; i++ {
			valid = id[i] > ' ' && id[i] < 0x7f && id[i] != '<' && id[i] != '>'
		}
		if !valid {
			return core.Invalid(field, "%q is not a valid message identifier.", id)
		}
	}
	return nil
}

// writeBodies writes each rendering of the text to a part that create opens.
func writeBodies(create func(mail.InlineHeader) (io.WriteCloser, error), bodies []body) error {
	for _, b := range bodies {
		var h mail.InlineHeader
		h.SetContentType(b.mediaType, map[string]string{"charset": "utf-8"})
		w, err := create(h)
		if err != nil {
			return err
		}
		if err := fill(w, []byte(b.content)); err != nil {
			return err
		}
	}
	return nil
}

// fill writes content to a part and closes it.
func fill(w io.WriteCloser, content []byte) error {
	if _, err := w.Write(content); err != nil {
		return err
	}
	return w.Close()
}

func writeMixed(w io.Writer, h mail.Header, bodies []body, parts []ports.MailPart) error {
	mw, err := mail.CreateWriter(w, h)
	if err != nil {
		return err
	}
	if len(bodies) == 1 {
		err = writeBodies(mw.CreateSingleInline, bodies)
	} else {
		var iw *mail.InlineWriter
		if iw, err = mw.CreateInline(); err == nil {
			err = writeBodies(iw.CreatePart, bodies)
			err = errors.Join(err, iw.Close())
		}
	}
	if err != nil {
		return err
	}
	for i, p := range parts {
		if err := writeAttachment(mw, p, i+1); err != nil {
			return err
		}
	}
	return mw.Close()
}

// writeAttachment writes the n-th part in base64. An inline part keeps its
// disposition and Content-ID so the HTML can refer to it; its file name goes
// in Content-Type's name, since go-message's inline header has no other.
func writeAttachment(mw *mail.Writer, p ports.MailPart, n int) error {
	mediaType := "application/octet-stream"
	if p.ContentType != "" {
		t, _, err := mime.ParseMediaType(p.ContentType)
		if err != nil || core.HasLineBreak(p.ContentType) {
			return core.Invalid("attachments", "%q is not a valid content type.", p.ContentType)
		}
		mediaType = t
	}
	if core.HasLineBreak(p.Filename) || core.HasLineBreak(p.ContentID) {
		return core.Invalid("attachments", "Line breaks are not allowed.")
	}
	name := fileName(p.Filename, mediaType, n)
	var ph mail.AttachmentHeader
	ph.SetContentType(mediaType, map[string]string{"name": name})
	ph.Set("Content-Transfer-Encoding", "base64")
	if p.ContentID != "" {
		if err := checkIDs("attachments", p.ContentID); err != nil {
			return err
		}
		ph.Set("Content-Id", "<"+p.ContentID+">")
	}
	var w io.WriteCloser
	var err error
	if p.Inline {
		ph.Set("Content-Disposition", "inline")
		w, err = mw.CreateSingleInline(mail.InlineHeader{Header: ph.Header})
	} else {
		ph.SetFilename(name)
		w, err = mw.CreateAttachment(ph)
	}
	if err != nil {
		return err
	}
	return fill(w, p.Content)
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
