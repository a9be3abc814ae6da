// Package mailmime reads inbound mail with enmime, which keeps going through
// broken MIME and says what it skipped, and writes outbound mail with
// go-message, which produces strict, CRLF-terminated RFC 5322.
package mailmime

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/mail"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jhillyerd/enmime/v2"
	"github.com/jhillyerd/enmime/v2/mediatype"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// MaxReferences is how many References entries Parse keeps, the newest ones:
// threading needs only the last few, and a hostile header can carry thousands.
const MaxReferences = 50

// maxPartErrors bounds what enmime records per part, so a message made of
// thousands of broken parts cannot grow Problems without end.
const maxPartErrors = 20

// parser holds the enmime options, each chosen for broken mail or for speed:
//   - SkipMalformedParts: a part whose header or body cannot be read is
//     dropped with a Problem instead of failing the whole message.
//   - MultipartWOBoundaryAsSinglePart: a multipart without a boundary is read
//     as one part instead of being an error.
//   - AllowCorruptTextPartErrorPolicy: a text part with corrupt base64 keeps
//     what decoded before the damage.
//   - DisableCharacterDetection: the declared charset is trusted. Detection
//     (chardet) costs more than the rest of the parse and can overrule a
//     correct declaration with a wrong guess; textMediaType and repairText
//     cover the undeclared case instead.
var parser = enmime.NewParser(
	enmime.SkipMalformedParts(true),
	enmime.MultipartWOBoundaryAsSinglePart(true),
	enmime.SetReadPartErrorPolicy(enmime.AllowCorruptTextPartErrorPolicy),
	enmime.DisableCharacterDetection(true),
	enmime.MaxStoredPartErrors(maxPartErrors),
	enmime.SetCustomParseMediaType(textMediaType),
)

// textMediaType is enmime's media type parser (which reads Content-Disposition
// too), with RFC 2231 parameters decoded first (decodeExtendedParams) and
// "text" without a subtype read as text/plain, as Python does. Text declaring
// no charset, or US-ASCII, is read as UTF-8: unlabelled 8-bit text is nearly
// always UTF-8 today (8BITMIME, scripts sending non-MIME mail), and enmime
// would decode it as Windows-1252. What is not valid UTF-8 is repaired later.
func textMediaType(ctype string) (string, map[string]string, []string, error) {
	mtype, params, invalid, err := parseMediaType(decodeExtendedParams(ctype))
	if err == nil && mtype == "text" {
		mtype = "text/plain"
	}
	if err == nil && strings.HasPrefix(mtype, "text/") {
		switch strings.ToLower(params["charset"]) {
		case "", "us-ascii", "ascii":
			params["charset"] = "utf-8"
		}
	}
	return mtype, params, invalid, err
}

// parseMediaType is enmime's media type parser, which repairs what the
// standard library's refuses (missing separators, unquoted specials,
// repeated or empty parameters) by rewriting the value before reading it
// with the standard library's: five times the cost of the reading, for
// every part of every message. A plain value (printable ASCII, its only
// spaces one after a ";") that the standard library reads as it is, as
// nearly every one is, is read by it alone; enmime reads such a value the
// same (TestPlainMediaTypesReadAsEnmimeReadsThem).
func parseMediaType(v string) (string, map[string]string, []string, error) {
	if plainMediaType(v) {
		if mtype, params, err := mime.ParseMediaType(v); err == nil {
			return mtype, params, nil, nil
		}
	}
	return mediatype.Parse(v)
}

// plainMediaType reports whether v holds only printable ASCII, with no
// space but one after a ";" (enmime keeps the space that ends an unquoted
// value; the standard library trims it).
func plainMediaType(v string) bool {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == ' ' && i > 0 && v[i-1] == ';' && i+1 < len(v) && v[i+1] != ' ':
		case c <= ' ' || c >= utf8.RuneSelf:
			return false
		}
	}
	return true
}

// Parser implements ports.MailParser. The zero value is ready and safe for
// concurrent use.
type Parser struct{}

var _ ports.MailParser = Parser{}

// Parse reads raw. It fails, with a KindInvalid error, only when raw holds no
// header field at all: it is empty, it starts with a blank line, or its first
// line is not a "Name: value" field (prose, binary data). Everything else
// parses, however broken: a missing closing boundary, a bad Content-Type, an
// unknown charset, missing or malformed headers, bare LF line endings, even a
// panic inside enmime keep what could be read and list the rest in Problems.
//
// Text and HTML end lines with "\n". Text and HTML parts that are not valid
// UTF-8 in their declared charset keep their UTF-8 and read the other bytes
// as Windows-1252.
func (Parser) Parse(raw []byte) (ports.ParsedMail, error) {
	return parse(raw, nil)
}

// Describe is Parse without the bytes of the parts that are not text: they
// are checked, counted (MailPart.Size) and dropped, so that describing a
// large attachment does not hold it decoded. Text parts keep their content.
func (Parser) Describe(raw []byte) (ports.ParsedMail, error) {
	return parse(raw, sizes{})
}

func parse(raw []byte, sized sizes) (ports.ParsedMail, error) {
	// White space before the first field is read as Postfix and Dovecot
	// do, which prepend a field of their own that it then continues.
	raw = bytes.TrimLeft(raw, " \t")
	if err := tooManyParts(raw); err != nil {
		return ports.ParsedMail{}, err
	}
	env, problems, err := readEnvelope(raw, sized)
	switch {
	case err != nil:
		// The MIME structure is beyond enmime; the header may still be fine.
		cause := err
		if env, problems, err = salvage(raw); err != nil {
			return ports.ParsedMail{}, notMessage(err)
		}
		problems = append(problems, "MIME structure unreadable, body kept as plain text: "+cause.Error())
	case len(env.Root.Header) == 0:
		return ports.ParsedMail{}, notMessage(errNoField)
	}
	return build(env, problems, sized), nil
}

var errNoField = errors.New("no header field could be read")

// notMessage says why raw is no message: the first line is not a header
// field (prose, binary data) or the header is empty.
func notMessage(cause error) error {
	return &core.Error{Kind: core.KindInvalid, Message: "not a mail message: " + cause.Error()}
}

// readEnvelope runs enmime. A panic inside it becomes an error, so that one
// hostile message cannot take the SMTP listener down.
func readEnvelope(raw []byte, sized sizes) (env *enmime.Envelope, problems []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			env, problems, err = nil, nil, fmt.Errorf("MIME parser panicked: %v", r)
		}
	}()
	root, err := readParts(raw, sized)
	if err != nil {
		return nil, nil, err
	}
	return envelope(root)
}

// envelope sorts a part tree into text, HTML and attachments.
func envelope(root *enmime.Part) (*enmime.Envelope, []string, error) {
	defaultToText(root)
	problems := repairText(root)
	// enmime reads every text part not marked as an attachment into Text
	// (or none past the first, in a multipart/alternative), so a named one
	// is shown to it as an attachment; its own disposition is put back.
	var named []*enmime.Part
	var declared []string
	root.DepthMatchAll(func(p *enmime.Part) bool {
		if namedText(p) {
			named, declared = append(named, p), append(declared, p.Disposition)
			p.Disposition = "attachment"
		}
		return false
	})
	env, err := parser.EnvelopeFromPart(root)
	for i, p := range named {
		p.Disposition = declared[i]
	}
	if err == nil && onlyBlankText(root) {
		env.Text = "" // not enmime's separators between empty parts
	}
	return env, problems, err
}

// namedText reports whether p is a text part with a file name inside a
// multipart: a file (inline or not), never the body.
func namedText(p *enmime.Part) bool {
	return p.Parent != nil && p.FileName != "" && isText(p)
}

// defaultToText reads a part that has no Content-Type as text/plain (RFC
// 2045 §5.2), except in a multipart/digest, where it is a message (RFC 2046
// §5.1.5); enmime took it for an attachment, and its text was lost.
func defaultToText(root *enmime.Part) {
	root.DepthMatchAll(func(p *enmime.Part) bool {
		if p.Parent != nil && p.FirstChild == nil && strings.TrimSpace(p.Header.Get("Content-Type")) == "" &&
			p.Parent.ContentType != "multipart/digest" && p.Disposition != "attachment" {
			p.ContentType = "text/plain"
			if p.Charset == "" {
				p.Charset = "utf-8"
			}
		}
		return false
	})
}

// onlyBlankText reports whether the text parts of a message hold nothing
// but white space (and there is at least one).
func onlyBlankText(root *enmime.Part) bool {
	blank, any := true, false
	root.DepthMatchAll(func(p *enmime.Part) bool {
		if p.ContentType == "text/plain" && p.Disposition != "attachment" {
			any = true
			blank = blank && len(bytes.TrimSpace(p.Content)) == 0
		}
		return false
	})
	return any && blank
}

// salvage reads the header on its own and keeps the body, undecoded, as the
// text, for mail whose MIME structure enmime could not read.
func salvage(raw []byte) (env *enmime.Envelope, problems []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			env, problems, err = nil, nil, fmt.Errorf("MIME parser panicked: %v", r)
		}
	}()
	br := bufio.NewReader(bytes.NewReader(raw))
	var collected problemList
	header, err := enmime.ReadHeader(br, &collected)
	if err != nil {
		return nil, nil, err
	}
	if len(header) == 0 {
		return nil, nil, errNoField
	}
	body, err := io.ReadAll(br)
	if err != nil {
		return nil, nil, err
	}
	// Without these the body would be read as MIME again, or as an attachment.
	for _, name := range []string{"Content-Type", "Content-Transfer-Encoding", "Content-Disposition"} {
		header.Del(name)
	}
	root := enmime.NewPart("text/plain")
	root.Header = header
	root.Content = []byte(lenientUTF8(string(body)))
	env, err = parser.EnvelopeFromPart(root)
	return env, collected, err
}

// problemList collects what enmime.ReadHeader reports.
type problemList []string

func (l *problemList) AddError(name, format string, args ...any) {
	*l = append(*l, "[E] "+name+": "+fmt.Sprintf(format, args...))
}

func (l *problemList) AddWarning(name, format string, args ...any) {
	*l = append(*l, "[W] "+name+": "+fmt.Sprintf(format, args...))
}

// isText reports whether enmime may read p into Text or HTML.
func isText(p *enmime.Part) bool {
	return (p.ContentType == "text/plain" || p.ContentType == "text/html") && p.Disposition != "attachment"
}

// repairText makes every text part valid UTF-8 before enmime builds Text and
// HTML from them: bytes that are not UTF-8 (an unknown charset, a false or
// missing declaration) are read as Windows-1252, the usual culprit, rather
// than dropped.
func repairText(root *enmime.Part) (problems []string) {
	root.DepthMatchAll(func(p *enmime.Part) bool {
		if isText(p) && !utf8.Valid(p.Content) {
			p.Content = []byte(lenientUTF8(string(p.Content)))
			problems = append(problems, fmt.Sprintf(
				"part %s (%s, charset %q) is not valid UTF-8: other bytes read as Windows-1252",
				p.PartID, p.ContentType, p.Charset))
		}
		return false
	})
	return problems
}

// build turns what enmime read into a ParsedMail.
func build(env *enmime.Envelope, problems []string, sized sizes) ports.ParsedMail {
	h := env.Root.Header
	pm := ports.ParsedMail{
		Header: core.Header{
			MessageID:  firstID(h.Get("Message-Id")),
			InReplyTo:  firstID(h.Get("In-Reply-To")),
			References: references(h.Get("References")),
			Subject:    lenientUTF8(env.GetHeader("Subject")),
		},
		Text:        bodyText(env.Text),
		HTML:        bodyText(env.HTML),
		Attachments: attachments(env, sized),
	}
	for _, e := range env.Errors {
		pm.Problems = append(pm.Problems, e.Error())
	}
	pm.Problems = append(pm.Problems, problems...)

	if from := h.Get("From"); from == "" {
		pm.Problems = append(pm.Problems, "missing From header")
	} else if list := addressList("From", from, &pm.Problems); len(list) > 0 {
		pm.FromEmail, pm.FromName = lenientUTF8(list[0].Address), lenientUTF8(list[0].Name)
	}
	pm.To = addresses(addressList("To", h.Get("To"), &pm.Problems))
	pm.Cc = addresses(addressList("Cc", h.Get("Cc"), &pm.Problems))

	if date := h.Get("Date"); date == "" {
		pm.Problems = append(pm.Problems, "missing Date header")
	} else if d, ok := parseDate(date); ok {
		pm.Date = d
	} else {
		pm.Problems = append(pm.Problems, fmt.Sprintf("unreadable Date header %q", date))
	}
	for i, p := range pm.Problems {
		pm.Problems[i] = lenientUTF8(p) // they quote the message
	}
	return pm
}

// attachments lists the parts enmime did not read into Text or HTML
// (attachments, inline parts, other non-text parts) in message order.
func attachments(env *enmime.Envelope, sized sizes) []ports.MailPart {
	n := len(env.Attachments) + len(env.Inlines) + len(env.OtherParts)
	if n == 0 {
		return nil
	}
	listed := make(map[*enmime.Part]bool, n)
	for _, set := range [][]*enmime.Part{env.Attachments, env.Inlines, env.OtherParts} {
		for _, p := range set {
			listed[p] = true
		}
	}
	html := env.Root.DepthMatchFirst(func(p *enmime.Part) bool {
		return p.ContentType == "text/html" && p.Disposition != "attachment" && !namedText(p)
	})
	var out []ports.MailPart
	env.Root.DepthMatchAll(func(p *enmime.Part) bool {
		body := p == html || p.ContentType == "text/plain" && p.Disposition != "attachment" && !namedText(p)
		if listed[p] && !body && p.FirstChild == nil { // a multipart's children are listed instead
			out = append(out, mailPart(p, len(out)+1, sized))
		}
		return false
	})
	return out
}

// mailPart describes the n-th listed part. A part without a disposition but
// with a Content-ID is referenced from the HTML, so it counts as inline.
func mailPart(p *enmime.Part, n int, sized sizes) ports.MailPart {
	ctype := p.ContentType
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	cid := firstID(p.Header.Get("Content-Id"))
	return ports.MailPart{
		Filename:    fileName(p.FileName, ctype, n),
		ContentType: ctype,
		ContentID:   cid,
		Inline:      p.Disposition == "inline" || p.Disposition == "" && cid != "",
		Content:     p.Content,
		Size:        sizeOf(p, sized),
	}
}

// sizeOf is how many bytes p's content has decoded.
func sizeOf(p *enmime.Part, sized sizes) int {
	if n, ok := sized[p]; ok {
		return n
	}
	return len(p.Content)
}

// fileName keeps the last element of a sender's file name (never a path) and
// makes up "attachment-<n><ext>" when there is none.
func fileName(name, ctype string, n int) string {
	name = lenientUTF8(name)
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, name))
	if name == "" || name == "." || name == ".." {
		return fmt.Sprintf("attachment-%d%s", n, extension(ctype))
	}
	return name
}

// addressList reads an address header leniently: with enmime's parser
// (which decodes RFC 2047 names and adds missing commas) and, when that
// fails, entry by entry, so that one bad entry does not lose the others.
func addressList(field, value string, problems *[]string) []*mail.Address {
	if strings.TrimSpace(value) == "" {
		return nil
	}
	list, err := enmime.ParseAddressList(value)
	if err == nil || errors.Is(err, mail.ErrHeaderNotPresent) { // "undisclosed-recipients:;"
		return list
	}
	*problems = append(*problems, fmt.Sprintf("%s header partly unreadable: %v", field, err))
	for _, entry := range strings.Split(value, ",") {
		if l, err := enmime.ParseAddressList(entry); err == nil {
			list = append(list, l...)
		} else if addr := looseAddress(entry); addr != "" {
			list = append(list, &mail.Address{Address: addr})
		}
	}
	return list
}

// looseAddress finds something shaped like local@domain in a broken entry:
// the text between angle brackets, or else the first word holding an '@'.
func looseAddress(entry string) string {
	if start := strings.LastIndexByte(entry, '<'); start >= 0 {
		if end := strings.IndexByte(entry[start:], '>'); end > 0 {
			entry = entry[start+1 : start+end]
		}
	}
	for _, word := range strings.Fields(entry) {
		word = strings.Trim(word, `"'()<>[];:`)
		if _, _, ok := core.SplitAddress(word); ok {
			return lenientUTF8(word)
		}
	}
	return ""
}

func addresses(list []*mail.Address) []string {
	if len(list) == 0 {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, a := range list {
		if a.Address != "" {
			out = append(out, lenientUTF8(a.Address))
		}
	}
	return out
}

// msgIDs reads a list of message identifiers without their angle brackets.
// When the list has brackets, only what they enclose counts (comments and
// stray words do not); otherwise it is split on white space and commas.
// Identifiers never hold white space or brackets.
func msgIDs(v string) []string {
	if !strings.Contains(v, "<") {
		return strings.FieldsFunc(v, func(r rune) bool { return r == '>' || r == ',' || unicode.IsSpace(r) })
	}
	var ids []string
	for {
		start := strings.IndexByte(v, '<')
		if start < 0 {
			return ids
		}
		v = v[start+1:]
		id := ""
		if end := strings.IndexAny(v, "<>"); end >= 0 && v[end] == '>' {
			// Folding can leave spaces inside an identifier; they are not part of it.
			id = strings.Join(strings.Fields(v[:end]), "")
			v = v[end+1:]
		} else { // cut short: keep its first word
			rest := ""
			if end >= 0 {
				v, rest = v[:end], v[end:]
			}
			if f := strings.Fields(v); len(f) > 0 {
				id = f[0]
			}
			v = rest
		}
		if id != "" {
			ids = append(ids, id)
		}
	}
}

func firstID(v string) string {
	if ids := msgIDs(v); len(ids) > 0 {
		return lenientUTF8(ids[0])
	}
	return ""
}

func references(v string) []string {
	ids := msgIDs(v)
	if len(ids) == 0 {
		return nil
	}
	if len(ids) > MaxReferences {
		ids = ids[len(ids)-MaxReferences:]
	}
	for i, id := range ids {
		ids[i] = lenientUTF8(id)
	}
	return ids
}

// dateLayouts are what real mail carries in Date besides RFC 5322, which
// mail.ParseDate reads first. A date without a zone is taken as UTC.
var dateLayouts = []string{
	"Mon, 2 Jan 2006 15:04:05",
	"2 Jan 2006 15:04:05",
	"Monday, 2 January 2006 15:04:05 -0700",
	"Mon, 2 January 2006 15:04:05 -0700",
	time.ANSIC,
	time.UnixDate,
	time.RFC3339,
	"2006-01-02 15:04:05 -0700",
	"2006-01-02 15:04:05",
}

// obsZones are RFC 5322's obsolete zone names that time.Parse, not knowing
// them, reads as offset zero.
var obsZones = map[string]int{
	"EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
}

// rfc5322Date is the usual form of Date, which mail.ParseDate reaches only
// after a dozen layouts without the day of the week, each failure an
// allocated error.
const rfc5322Date = "Mon, 2 Jan 2006 15:04:05 -0700"

func parseDate(v string) (time.Time, bool) {
	v = strings.Join(strings.Fields(v), " ")
	d, err := time.Parse(rfc5322Date, v)
	if err != nil {
		d, err = mail.ParseDate(v)
	}
	for _, layout := range dateLayouts {
		if err == nil {
			break
		}
		d, err = time.Parse(layout, v)
	}
	if err != nil {
		return time.Time{}, false
	}
	if name, offset := d.Zone(); offset == 0 {
		if hours, ok := obsZones[name]; ok {
			y, mo, day := d.Date()
			d = time.Date(y, mo, day, d.Hour(), d.Minute(), d.Second(), d.Nanosecond(),
				time.FixedZone(name, hours*3600))
		}
	}
	return d, true
}

// bodyText is a body as its sender wrote it: lines end with "\n", and the
// line break that ends the last line is the format's (RFC 5322 ends every
// line with CRLF; SMTP adds one when a body lacks it), not a blank line
// the sender added. Blank lines the sender did write stay.
func bodyText(s string) string {
	s = lf(s)
	return strings.TrimSuffix(s, "\n")
}

// lf ends every line with "\n" alone: carriage returns before a line feed
// are transport, not text.
func lf(s string) string {
	if !strings.Contains(s, "\r\n") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(strings.TrimRight(s[:i], "\r"))
		b.WriteByte('\n')
		s = s[i+1:]
	}
}

// lenientUTF8 keeps valid UTF-8 and reads every other byte as Windows-1252.
func lenientUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/2)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			r = rune(s[i])
			if r >= 0x80 && r < 0xa0 {
				r = cp1252[r-0x80]
			}
		}
		b.WriteRune(r)
		i += size
	}
	return b.String()
}

// cp1252 maps Windows-1252's 0x80–0x9f; its other bytes are ISO-8859-1's.
// The five unassigned bytes keep their C1 code points, as browsers do.
var cp1252 = [32]rune{
	'€', 0x81, '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', 0x8d, 'Ž', 0x8f,
	0x90, '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', 0x9d, 'ž', 'Ÿ',
}
