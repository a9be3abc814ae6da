package console

import (
	"bytes"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/callsign/callsign/core"
)

// A message's own page: its verification, its header fields as they came,
// and its raw source (shown up to sourceShown; the whole as a download).

// sourceShown bounds the source a page shows: a message may be 25 MB.
const sourceShown = 256 << 10

type sourceData struct {
	Message   core.EmailMessage
	Headers   []headerField
	Source    string
	Truncated bool // the page shows the first sourceShown bytes
	Size      int64
}

type headerField struct{ Name, Value string }

func (c *console) messagePage(v *visit) error {
	id, err := pathID(v, "id", "Message")
	if err != nil {
		return err
	}
	m, err := c.app.Reading.Message(v.r.Context(), v.principal, id)
	if err != nil {
		return err
	}
	raw, err := c.app.Reading.Raw(v.r.Context(), v.principal, id)
	if err != nil {
		return err
	}
	if v.r.URL.Query().Get("download") == "1" {
		h := v.w.Header()
		h.Set("Content-Type", "message/rfc822")
		h.Set("Content-Disposition", `attachment; filename="message-`+strconv.FormatInt(id, 10)+`.eml"`)
		h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
		_, _ = v.w.Write(raw)
		return nil
	}
	ident, err := c.app.Identities.Get(v.r.Context(), v.principal, m.IdentityID)
	if err != nil {
		return err
	}
	data := sourceData{Message: m, Headers: headerFields(raw), Size: int64(len(raw))}
	data.Source, data.Truncated = string(raw[:min(len(raw), sourceShown)]), len(raw) > sourceShown
	c.render(v, http.StatusOK, "message", view{Title: subjectOrNone(m.Subject), Identity: &ident, Section: "mail", Data: data})
	return nil
}

// headerFields are the source's header fields in their order, unfolded
// and decoded (RFC 2047) where they can be.
func headerFields(raw []byte) []headerField {
	head := raw
	if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 {
		head = raw[:i]
	} else if i := bytes.Index(raw, []byte("\n\n")); i >= 0 {
		head = raw[:i]
	}
	head = head[:min(len(head), sourceShown)]
	var fields []headerField
	for _, line := range strings.Split(strings.ReplaceAll(string(head), "\r\n", "\n"), "\n") {
		if line != "" && (line[0] == ' ' || line[0] == '\t') && len(fields) > 0 {
			fields[len(fields)-1].Value += " " + strings.TrimSpace(line) // a folded line
			continue
		}
		if name, value, ok := strings.Cut(line, ":"); ok && name != "" {
			fields = append(fields, headerField{Name: name, Value: strings.TrimSpace(value)})
		}
	}
	for i := range fields {
		if decoded, err := headerDecoder.DecodeHeader(fields[i].Value); err == nil {
			fields[i].Value = decoded
		}
	}
	return fields
}

// headerDecoder reads encoded words in the charsets the standard library knows.
var headerDecoder = new(mime.WordDecoder)

func subjectOrNone(s string) string {
	if s == "" {
		return "(no subject)"
	}
	return s
}
