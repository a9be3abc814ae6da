package mailmime

import (
	"bufio"
	"bytes"
	"io"
	"strings"

	"github.com/emersion/go-message"
	"github.com/emersion/go-message/textproto"

	"github.com/callsign/callsign/core"
)

// MaxDSNRecipients bounds the recipients read from one report.
const MaxDSNRecipients = 1000

// maxDSNPart bounds the delivery-status part read (it is a few hundred
// bytes per recipient; the message as a whole is bounded by the listener).
const maxDSNPart = 1 << 20

// ReadDSN reads a delivery status notification (RFC 3464): a
// multipart/report of report-type delivery-status (or RFC 6533's
// global-delivery-status), whose message/delivery-status part has a block
// of fields about the report, then one block per recipient. The returned
// message's Message-ID comes from the third part (message/rfc822 or
// text/rfc822-headers), else from an X-Original-Message-ID field (Gmail).
// ok is false for anything else, including a report without recipients.
func (Parser) ReadDSN(raw []byte) (dsn core.DSN, ok bool) {
	e, err := message.Read(bytes.NewReader(raw))
	if err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
		return core.DSN{}, false
	}
	mediaType, params, _ := e.Header.ContentType()
	reportType := strings.ToLower(params["report-type"])
	if mediaType != "multipart/report" || (reportType != "delivery-status" && reportType != "global-delivery-status") {
		return core.DSN{}, false
	}
	mr := e.MultipartReader()
	if mr == nil {
		return core.DSN{}, false
	}
	for {
		part, err := mr.NextPart()
		if err != nil {
			break // the end, or a broken boundary: keep what was read
		}
		switch t, _, _ := part.Header.ContentType(); t {
		case "message/delivery-status", "message/global-delivery-status":
			readStatus(io.LimitReader(part.Body, maxDSNPart), &dsn)
		case "message/rfc822", "text/rfc822-headers", "message/global", "message/global-headers":
			if h, err := textproto.ReadHeader(bufio.NewReader(io.LimitReader(part.Body, maxDSNPart))); err == nil || h.Len() > 0 {
				if id := firstID(h.Get("Message-Id")); id != "" {
					dsn.OriginalMessageID = id
				}
			}
		}
	}
	return dsn, len(dsn.Recipients) > 0
}

// readStatus reads the blocks of a delivery-status part: the first is
// about the report, each later one about a recipient.
func readStatus(r io.Reader, dsn *core.DSN) {
	br := bufio.NewReader(r)
	first := true
	for len(dsn.Recipients) < MaxDSNRecipients {
		skipBlankLines(br)
		h, err := textproto.ReadHeader(br)
		if h.Len() == 0 {
			return
		}
		if first {
			dsn.ReportingMTA = typedValue(h.Get("Reporting-Mta"))
			if id := firstID(h.Get("X-Original-Message-Id")); id != "" && dsn.OriginalMessageID == "" {
				dsn.OriginalMessageID = id
			}
			first = false
		} else {
			rcpt := core.DSNRecipient{
				FinalRecipient:    address(h.Get("Final-Recipient")),
				OriginalRecipient: address(h.Get("Original-Recipient")),
				Action:            core.DSNAction(strings.ToLower(firstWord(h.Get("Action")))),
				Status:            firstWord(h.Get("Status")),
				Diagnostic:        unfold(h.Get("Diagnostic-Code")),
			}
			if rcpt.Address() != "" {
				dsn.Recipients = append(dsn.Recipients, rcpt)
			}
		}
		if err != nil {
			return
		}
	}
}

// skipBlankLines moves past the empty lines between blocks (some senders
// put more than one).
func skipBlankLines(br *bufio.Reader) {
	for {
		b, err := br.Peek(1)
		if err != nil || (b[0] != '\r' && b[0] != '\n') {
			return
		}
		br.ReadByte()
	}
}

// typedValue drops the type of a "type; value" field ("dns; mx.example").
func typedValue(v string) string {
	if _, rest, ok := strings.Cut(v, ";"); ok {
		v = rest
	}
	return strings.TrimSpace(unfold(v))
}

// address reads an "rfc822; user@example.com" recipient field: the bare
// address, lower-cased in its domain; "" for other address types.
func address(v string) string {
	kind, rest, ok := strings.Cut(v, ";")
	if !ok || !strings.EqualFold(strings.TrimSpace(kind), "rfc822") && !strings.EqualFold(strings.TrimSpace(kind), "utf-8") {
		return ""
	}
	addr := strings.Trim(strings.TrimSpace(unfold(rest)), "<>")
	local, domain, ok := core.SplitAddress(addr)
	if !ok {
		return ""
	}
	return local + "@" + core.NormalizeDomain(domain)
}

func firstWord(v string) string {
	if f := strings.Fields(v); len(f) > 0 {
		return f[0]
	}
	return ""
}

// unfold makes a folded field one line with single spaces.
func unfold(v string) string { return strings.Join(strings.Fields(v), " ") }
