package imap

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime/quotedprintable"
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/textproto"
)

// FETCH is answered from the stored source, as it is: any message that SMTP
// accepted, however broken, gets a valid BODYSTRUCTURE and ENVELOPE, and
// BODY[] is its bytes exactly (so RFC822.SIZE, the stored size, is what is
// served). go-imap's own helpers read with a strict header parser (an mbox
// "From " line or a missing blank line left the message empty) and a
// multipart whose parts cannot be read gave a structure without children,
// which go-imap's writer refuses by panicking.

// maxNesting is the deepest MIME nesting served as structure; deeper
// entities are served as one opaque part.
const maxNesting = 32

// entity is one MIME entity of a stored message: the message itself, a part,
// or a message inside a message/rfc822 part. Every slice points into the
// stored source, so a parsed message costs little more than its bytes.
type entity struct {
	fields    []headerLine // in order, as stored
	rawHeader []byte       // the header block, with the blank line that ends it when there is one
	body      []byte
	header    textproto.Header // fields, for go-message's field readers

	mediaType string // lower case type/subtype; text/plain when missing or unreadable
	params    map[string]string
	children  []*entity // of a multipart
	inner     *entity   // of a message/rfc822 or message/global part
}

// headerLine is one header field: its name and its raw lines.
type headerLine struct {
	name string
	raw  []byte
}

// parseMessage reads a stored message.
func parseMessage(raw []byte) *entity { return parseEntity(raw, "", 0) }

// parseEntity reads b, a part of a parentType multipart ("" for none): the
// parts of a multipart/digest are messages by default (RFC 2046 §5.1.5).
func parseEntity(b []byte, parentType string, depth int) *entity {
	e := &entity{}
	e.fields, e.rawHeader, e.body = splitHeader(b, depth == 0)
	for _, f := range e.fields {
		e.header.AddRaw(f.raw)
	}
	e.mediaType, e.params = contentType(e.header, parentType)
	switch {
	case depth >= maxNesting:
		if strings.HasPrefix(e.mediaType, "multipart/") || strings.HasPrefix(e.mediaType, "message/") {
			e.mediaType, e.params = "application/octet-stream", nil
		}
	case strings.HasPrefix(e.mediaType, "multipart/"):
		for _, part := range splitMultipart(e.body, e.params["boundary"]) {
			e.children = append(e.children, parseEntity(part, e.mediaType, depth+1))
		}
		if len(e.children) == 0 {
			// No part can be read (no boundary, or none in the body): the
			// body is served as what it most likely is, text.
			e.mediaType, e.params = "text/plain", nil
		}
	case e.mediaType == "message/rfc822" || e.mediaType == "message/global":
		e.inner = parseEntity(e.body, "", depth+1)
	}
	return e
}

// contentType reads the media type the way RFC 2045 §5.2 asks: a missing or
// unreadable Content-Type is text/plain; us-ascii (message/rfc822 in a
// digest), and a type without a subtype is read as text/plain.
func contentType(h textproto.Header, parentType string) (string, map[string]string) {
	value := h.Get("Content-Type")
	if strings.TrimSpace(value) == "" {
		if parentType == "multipart/digest" {
			return "message/rfc822", nil
		}
		return "text/plain", map[string]string{"charset": "us-ascii"}
	}
	t, params, err := (&gomessage.Header{Header: h}).ContentType()
	if err != nil || strings.Count(t, "/") != 1 || strings.HasPrefix(t, "/") || strings.HasSuffix(t, "/") {
		return "text/plain", map[string]string{"charset": "us-ascii"}
	}
	return strings.ToLower(t), params
}

// splitHeader cuts an entity into its header fields and body. The header
// ends at the blank line or, when there is none, at the first line that is
// not a field (the body then starts there). A message may start with an
// mbox "From " line, which is kept in the header block but is no field.
func splitHeader(b []byte, message bool) (fields []headerLine, rawHeader, body []byte) {
	pos := 0
	if message && bytes.HasPrefix(b, []byte("From ")) {
		pos = lineEnd(b, 0)
	}
	for pos < len(b) {
		end := lineEnd(b, pos)
		line := b[pos:end]
		if len(bytes.TrimRight(line, "\r\n")) == 0 { // the blank line
			return fields, b[:end], b[end:]
		}
		if line[0] == ' ' || line[0] == '\t' {
			if n := len(fields); n > 0 {
				f := &fields[n-1]
				f.raw = b[end-len(f.raw)-len(line) : end]
			}
			// A continuation with no field before it belongs to nothing.
			pos = end
			continue
		}
		name, ok := fieldName(line)
		if !ok {
			return fields, b[:pos], b[pos:]
		}
		fields = append(fields, headerLine{name: name, raw: line})
		pos = end
	}
	return fields, b, nil
}

// fieldName is the name of a "Name: value" line; RFC 5322's obsolete syntax
// allows white space before the colon.
func fieldName(line []byte) (string, bool) {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return "", false
	}
	name := bytes.TrimRight(line[:colon], " \t")
	if len(name) == 0 {
		return "", false
	}
	for _, c := range name {
		if c <= ' ' || c >= 0x7f {
			return "", false
		}
	}
	return string(name), true
}

// lineEnd is where the line starting at pos ends, after its line feed.
func lineEnd(b []byte, pos int) int {
	if i := bytes.IndexByte(b[pos:], '\n'); i >= 0 {
		return pos + i + 1
	}
	return len(b)
}

// splitMultipart cuts a multipart body at its delimiters (RFC 2046 §5.1.1):
// "--boundary" at the start of a line, then optional white space and the
// line break; the line break before a delimiter belongs to it. The preamble
// and the epilogue are not parts. Without a closing delimiter the last part
// runs to the end.
func splitMultipart(body []byte, boundary string) [][]byte {
	if boundary == "" {
		return nil
	}
	delim := []byte("--" + boundary)
	var parts [][]byte
	start := -1 // where the current part began, once a delimiter was seen
	for pos := 0; pos < len(body); {
		end := lineEnd(body, pos)
		line := bytes.TrimRight(body[pos:end], "\r\n")
		if rest, ok := bytes.CutPrefix(line, delim); ok {
			closing := bytes.HasPrefix(rest, []byte("--"))
			if closing {
				rest = rest[2:]
			}
			if len(bytes.Trim(rest, " \t")) == 0 {
				if start >= 0 {
					parts = append(parts, withoutFinalBreak(body[start:pos]))
				}
				if closing {
					return parts
				}
				start = end
			}
		}
		pos = end
	}
	if start >= 0 {
		parts = append(parts, body[start:])
	}
	return parts
}

// withoutFinalBreak drops the line break that belongs to the next delimiter.
func withoutFinalBreak(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// isMultipart reports whether e is served with children.
func (e *entity) isMultipart() bool { return len(e.children) > 0 }

// envelope is the ENVELOPE of a message.
func (e *entity) envelope() *imap.Envelope { return imapserver.ExtractEnvelope(e.header) }

// structure is e's BODYSTRUCTURE, extended (go-imap writes the basic BODY
// form from it too). Every multipart has children.
func (e *entity) structure() imap.BodyStructure {
	h := gomessage.Header{Header: e.header}
	mtype, subtype, _ := strings.Cut(e.mediaType, "/")
	if e.isMultipart() {
		bs := &imap.BodyStructureMultiPart{Subtype: subtype, Extended: &imap.BodyStructureMultiPartExt{
			Params: e.params, Disposition: disposition(h), Language: language(h), Location: h.Get("Content-Location")}}
		for _, c := range e.children {
			bs.Children = append(bs.Children, c.structure())
		}
		return bs
	}
	bs := &imap.BodyStructureSinglePart{
		Type: mtype, Subtype: subtype, Params: e.params,
		ID: h.Get("Content-Id"), Description: h.Get("Content-Description"),
		Encoding: strings.TrimSpace(h.Get("Content-Transfer-Encoding")),
		Size:     uint32(len(e.body)),
		Extended: &imap.BodyStructureSinglePartExt{Disposition: disposition(h), Language: language(h), Location: h.Get("Content-Location")},
	}
	lines := int64(bytes.Count(e.body, []byte("\n")))
	switch {
	case e.inner != nil:
		bs.MessageRFC822 = &imap.BodyStructureMessageRFC822{Envelope: e.inner.envelope(), BodyStructure: e.inner.structure(), NumLines: lines}
	case mtype == "text":
		bs.Text = &imap.BodyStructureText{NumLines: lines}
	}
	return bs
}

func disposition(h gomessage.Header) *imap.BodyStructureDisposition {
	disp, params, err := h.ContentDisposition()
	if err != nil || disp == "" {
		return nil
	}
	return &imap.BodyStructureDisposition{Value: disp, Params: params}
}

func language(h gomessage.Header) []string {
	v := h.Get("Content-Language")
	if v == "" {
		return nil
	}
	var langs []string
	for _, l := range strings.Split(v, ",") {
		if l = strings.TrimSpace(l); l != "" {
			langs = append(langs, l)
		}
	}
	return langs
}

// part finds the entity a section's part numbers name (RFC 3501 §6.4.5):
// part 1 of a message that is not multipart is its body; a number inside a
// message/rfc822 part counts in the message it holds. nil when there is no
// such part.
func (e *entity) part(path []int) *entity {
	cur := e
	if !cur.isMultipart() && len(path) > 0 && path[0] == 1 {
		path = path[1:]
	}
	for _, n := range path {
		if cur.inner != nil {
			cur = cur.inner
		}
		switch {
		case cur.isMultipart() && n >= 1 && n <= len(cur.children):
			cur = cur.children[n-1]
		case cur.isMultipart() || n != 1:
			return nil
		}
	}
	return cur
}

// section is what BODY[...] asks for, before any <partial>.
func (e *entity) section(item *imap.FetchItemBodySection) []byte {
	p := e.part(item.Part)
	if p == nil {
		return nil
	}
	top := len(item.Part) == 0
	switch item.Specifier {
	case imap.PartSpecifierNone:
		if top {
			return p.bodyWithHeader()
		}
		return p.body
	case imap.PartSpecifierMIME:
		return p.rawHeader
	}
	msg := p // HEADER and TEXT of a part are those of the message it holds
	if !top {
		if p.inner == nil {
			return nil
		}
		msg = p.inner
	}
	switch item.Specifier {
	case imap.PartSpecifierText:
		return msg.body
	case imap.PartSpecifierHeader:
		if len(item.HeaderFields) == 0 && len(item.HeaderFieldsNot) == 0 {
			return msg.headerBlock()
		}
		return msg.headerFields(item.HeaderFields, item.HeaderFieldsNot)
	}
	return nil
}

// bodyWithHeader is the whole entity as stored.
func (e *entity) bodyWithHeader() []byte {
	return e.rawHeader[: len(e.rawHeader)+len(e.body) : len(e.rawHeader)+len(e.body)]
}

// headerBlock is the header as stored, ending with a blank line as RFC 3501
// asks of BODY[HEADER]: one is added when the stored header lacks it.
func (e *entity) headerBlock() []byte {
	h := e.rawHeader
	if bytes.HasSuffix(h, []byte("\n\n")) || bytes.HasSuffix(h, []byte("\r\n\r\n")) || bytes.Equal(h, []byte("\r\n")) {
		return h
	}
	out := append([]byte(nil), h...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\r', '\n')
	}
	return append(out, '\r', '\n')
}

// headerFields is HEADER.FIELDS (keep non-empty) or HEADER.FIELDS.NOT
// (drop), the fields as stored, then the blank line.
func (e *entity) headerFields(keep, drop []string) []byte {
	has := func(list []string, name string) bool {
		for _, n := range list {
			if strings.EqualFold(n, name) {
				return true
			}
		}
		return false
	}
	var out []byte
	for _, f := range e.fields {
		if len(keep) > 0 && !has(keep, f.name) || has(drop, f.name) {
			continue
		}
		out = append(out, f.raw...)
		if !bytes.HasSuffix(f.raw, []byte("\n")) {
			out = append(out, '\r', '\n')
		}
	}
	return append(out, '\r', '\n')
}

// binary is BINARY[part]: the part's body without its transfer encoding;
// for the whole message, the header and the decoded body.
func (e *entity) binary(part []int) []byte {
	p := e.part(part)
	if p == nil {
		return nil
	}
	decoded := p.decodedBody()
	if len(part) > 0 {
		return decoded
	}
	return append(append([]byte(nil), p.rawHeader...), decoded...)
}

// decodedBody undoes base64 and quoted-printable; a body that does not
// decode is served as stored.
func (e *entity) decodedBody() []byte {
	var r io.Reader
	switch strings.ToLower(strings.TrimSpace(e.header.Get("Content-Transfer-Encoding"))) {
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, &skipSpace{r: bytes.NewReader(e.body)})
	case "quoted-printable":
		r = quotedprintable.NewReader(bytes.NewReader(e.body))
	default:
		return e.body
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return e.body
	}
	return out
}

// skipSpace drops the line breaks and spaces between base64 lines.
type skipSpace struct{ r io.ByteReader }

func (s *skipSpace) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c, err := s.r.ReadByte()
		if err != nil {
			return n, err
		}
		if c != '\r' && c != '\n' && c != ' ' && c != '\t' {
			p[n] = c
			n++
		}
	}
	return n, nil
}

// partial applies a section's <offset.size>.
func partial(b []byte, p *imap.SectionPartial) []byte {
	if p == nil {
		return b
	}
	if p.Offset >= int64(len(b)) {
		return nil
	}
	end := p.Offset + p.Size
	if end > int64(len(b)) {
		end = int64(len(b))
	}
	return b[p.Offset:end]
}
