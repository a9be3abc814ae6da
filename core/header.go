package core

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Header is what Callsign reads from and writes into a message's header:
// the parser fills it, the composer writes it, and a stored message keeps
// it. The Date header travels beside it in the parsed and composed forms
// only: a stored message has no date of its own but the time it was stored
// (EmailMessage.CreatedAt).
type Header struct {
	MessageID  string   // without angle brackets
	InReplyTo  string   // without angle brackets
	References []string // without angle brackets, oldest first
	FromEmail  string   // bare address
	FromName   string   // display name, in UTF-8
	To         []string // bare addresses
	Cc         []string
	Subject    string // in UTF-8
}

// Clean makes a received header safe to keep and to answer: control
// characters (CR and LF among them, which an encoded word can carry) become
// spaces in every field, so that a reply or forward never meets a line
// break the caller did not send. Text is also made valid UTF-8 (CleanText).
func (h *Header) Clean() {
	h.MessageID, h.InReplyTo = headerText(h.MessageID), headerText(h.InReplyTo)
	h.FromEmail, h.FromName, h.Subject = headerText(h.FromEmail), headerText(h.FromName), headerText(h.Subject)
	for _, l := range [][]string{h.References, h.To, h.Cc} {
		for i := range l {
			l[i] = headerText(l[i])
		}
	}
}

// headerText is s as valid UTF-8 with every control character (C0, DEL,
// C1) replaced by a space.
func headerText(s string) string {
	s = CleanText(s)
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// CleanText is s as a database can store it on every dialect: invalid
// UTF-8 and NUL bytes (PostgreSQL refuses both in text) each become U+FFFD.
// Valid text without NUL comes back unchanged, without copying.
func CleanText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
