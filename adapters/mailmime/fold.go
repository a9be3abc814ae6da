package mailmime

import (
	"fmt"
	"net/mail"
	"strings"
	"unicode/utf8"
)

// Header values that need encoding are written so that no line of the field
// is longer than maxLine: RFC 2047 §2 allows 76 characters on a line that
// holds encoded words (RFC 5322 §2.1.1 asks for 78 on any line). go-message
// folds a field at its white space to the same length, so each encoded piece
// made here (an encoded word, a parameter section) fits on a line of its own
// after the folding white space; the first must also fit after "Name: ".
const (
	maxLine = 76
	// maxWord is the longest encoded word (RFC 2047 §2).
	maxWord = 75
)

// firstRoom is how long the first piece of a field's value may be.
func firstRoom(field string) int { return maxLine - len(field) - len(": ") }

// needsWords reports whether s cannot be written as it is in a header:
// anything but printable ASCII, spaces and tabs.
func needsWords(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] < ' ' || s[i] > '~') && s[i] != '\t' {
			return true
		}
	}
	return false
}

// encodedWords writes s as RFC 2047 "Q" encoded words in UTF-8, separated by
// spaces (which decoders drop between encoded words, RFC 2047 §6.2): the
// first at most first characters long, the others at most maxWord. A word
// always ends between two characters, never inside one, so each decodes on
// its own. Only the characters RFC 2047 §5(3) allows in a phrase are left
// as they are, so the words are valid in a display name as in a subject.
func encodedWords(s string, first int) string {
	const prefix, suffix = "=?utf-8?q?", "?="
	var out, word strings.Builder
	room := first
	word.WriteString(prefix)
	for _, r := range s {
		var buf [utf8.UTFMax]byte
		encoded := qChar(buf[:utf8.EncodeRune(buf[:], r)])
		if word.Len() > len(prefix) && word.Len()+len(encoded)+len(suffix) > room {
			out.WriteString(word.String() + suffix + " ")
			word.Reset()
			word.WriteString(prefix)
			room = maxWord
		}
		word.WriteString(encoded)
	}
	out.WriteString(word.String() + suffix)
	return out.String()
}

// qChar is the Q encoding of one character's bytes.
func qChar(b []byte) string {
	if len(b) == 1 {
		switch c := b[0]; {
		case c == ' ':
			return "_"
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("!*+-/", c) >= 0:
			return string(c)
		}
	}
	var s strings.Builder
	for _, c := range b {
		fmt.Fprintf(&s, "=%02X", c)
	}
	return s.String()
}

// text is an unstructured field's value (Subject), encoded when it must be.
func text(field, value string) string {
	if !needsWords(value) {
		return value
	}
	return encodedWords(value, firstRoom(field))
}

// mailboxes is an address field's value: "Name <address>" or "<address>",
// comma-separated, with non-ASCII names as phrases of encoded words.
func mailboxes(field string, list []*mail.Address) string {
	out := make([]string, len(list))
	for i, a := range list {
		if needsWords(a.Name) {
			out[i] = phrase(a.Name, firstRoom(field)) + " " + (&mail.Address{Address: a.Address}).String()
		} else {
			out[i] = a.String()
		}
	}
	return strings.Join(out, ", ")
}

// phrase writes a display name as Python's email package does: the words
// made of letters, digits and hyphens stay as they are, each run of other
// words (with the spaces inside it) becomes encoded words, and the spaces
// between the two kinds stay spaces. Two encoded words then meet only inside
// a run too long for one word, where decoders drop the space between them
// (RFC 2047 §6.2), which Python before gh-128110 does not.
func phrase(name string, first int) string {
	words := strings.Split(name, " ")
	var out, run []string
	flush := func() {
		if len(run) > 0 {
			room := maxWord
			if len(out) == 0 {
				room = first
			}
			out = append(out, encodedWords(strings.Join(run, " "), room))
			run = nil
		}
	}
	for _, w := range words {
		if plainWord(w) {
			flush()
			out = append(out, w)
		} else {
			run = append(run, w)
		}
	}
	flush()
	return strings.Join(out, " ")
}

// plainWord reports whether w can stand unencoded in a phrase: letters,
// digits and hyphens, and not empty (an empty word is a doubled space,
// which only an encoded word keeps).
func plainWord(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return w != ""
}

// withParams is a Content-Type or Content-Disposition value: value, then the
// parameters in the order given (name, value pairs). A parameter that is
// not short printable ASCII is written as RFC 2231 sections in UTF-8
// (name*0*, name*1*, …), each short enough for a line of its own and each ending
// between two characters; mail clients, Python and Go all read them.
func withParams(value string, params ...string) string {
	var b strings.Builder
	b.WriteString(value)
	for i := 0; i+1 < len(params); i += 2 {
		name, v := params[i], params[i+1]
		b.WriteString(";")
		if plain := " " + name + "=" + quoteParam(v); !needsWords(v) && len(plain+";") <= maxLine {
			b.WriteString(plain)
			continue
		}
		for n, section := range paramSections(v, maxLine-1-len(name)-len("*00*=;")) {
			if n > 0 {
				b.WriteString(";")
			}
			fmt.Fprintf(&b, " %s*%d*=%s", name, n, section)
		}
	}
	return b.String()
}

// quoteParam is v as a token, or quoted when it holds characters a token
// cannot (RFC 2045 §5.1).
func quoteParam(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t()<>@,;:\\\"/[]?=") {
		return v
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// paramSections percent-encodes v (RFC 2231 §4) in sections of at most room
// characters, the first led by the charset, each ending between characters.
func paramSections(v string, room int) []string {
	var sections []string
	var cur strings.Builder
	cur.WriteString("utf-8''")
	for _, r := range v {
		var buf [utf8.UTFMax]byte
		encoded := percentChar(buf[:utf8.EncodeRune(buf[:], r)])
		if cur.Len() > 0 && cur.Len()+len(encoded) > room {
			sections = append(sections, cur.String())
			cur.Reset()
		}
		cur.WriteString(encoded)
	}
	return append(sections, cur.String())
}

// percentChar is one character's bytes as RFC 2231 attribute-chars, the
// others percent-encoded.
func percentChar(b []byte) string {
	if len(b) == 1 {
		c := b[0]
		if c > ' ' && c < 0x7f && !strings.ContainsRune("*'%()<>@,;:\\\"/[]?=", rune(c)) {
			return string(c)
		}
	}
	var s strings.Builder
	for _, c := range b {
		fmt.Fprintf(&s, "%%%02X", c)
	}
	return s.String()
}
