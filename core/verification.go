package core

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Verification is what a received message hands its reader for signing in:
// a one-time code, a link to click, or both.
type Verification struct {
	Code string
	Link string
	Kind VerificationKind
}

// VerificationKind says which of Code and Link a Verification carries.
type VerificationKind string

const (
	VerificationCode VerificationKind = "code"
	VerificationLink VerificationKind = "link"
	VerificationBoth VerificationKind = "both"
)

// NewVerification is the Verification of a code and a link as stored, nil
// when both are empty.
func NewVerification(code, link string) *Verification {
	switch {
	case code != "" && link != "":
		return &Verification{Code: code, Link: link, Kind: VerificationBoth}
	case code != "":
		return &Verification{Code: code, Kind: VerificationCode}
	case link != "":
		return &Verification{Link: link, Kind: VerificationLink}
	}
	return nil
}

// VerificationSource says whether a verification came by mail or by text.
type VerificationSource string

const (
	VerificationByEmail VerificationSource = "email"
	VerificationBySMS   VerificationSource = "sms"
)

// ReceivedVerification is one verification an identity received: from
// which message, by which way and from whom.
type ReceivedVerification struct {
	Verification
	Source     VerificationSource
	MessageID  int64
	IdentityID string
	From       string
	CreatedAt  time.Time
}

// Limits of the verifications list and of a caller's wait on it.
const (
	DefaultVerificationLimit = 20
	MaxVerificationLimit     = 100
	MaxVerificationWait      = 60 * time.Second
)

// ReceivedText is what the verification rule reads of a received message.
// An SMS has only From (the number) and Text (the body).
type ReceivedText struct {
	From    string // the sender's address or number
	Subject string
	Text    string // the text body
	HTML    string // the HTML body, if any
}

// The rule reads only the start of the subject and of each body: codes and
// links sit near the top of the short messages that carry them, and a bound
// keeps the cost of a 25 MB body the same as that of a 300 KB one. HTML gets
// more room than text because style sheets often fill its first tens of
// kilobytes; of its text, as much as of a text body is read.
const (
	verificationSubjectLimit = 1 << 10
	verificationTextLimit    = 64 << 10
	verificationHTMLLimit    = 256 << 10
)

// FindVerification examines one received message, once, at receipt, and
// returns the one-time code and the sign-in, verification or password-reset
// link it carries, or nil when it carries neither. It is a heuristic: a code
// is a code-shaped word near a word such as "code", "OTP" or "verification"
// (in English, German, French, Spanish and Portuguese) and away from words
// such as "order", "tracking" or "invoice"; a link is one whose label (or,
// for a bare "click here" or a plain URL, the sentence around it) asks to
// verify, confirm, sign in or reset a password and that carries a token.
// The sender's own site wins a tie between links. docs/design.md lists
// what it cannot see.
func FindVerification(m ReceivedText) *Verification {
	text := cutUTF8(m.Text, verificationTextLimit)
	var doc htmlDoc
	if m.HTML != "" {
		doc = readHTML(cutUTF8(m.HTML, verificationHTMLLimit))
	}

	code := findCode(cutUTF8(m.Subject, verificationSubjectLimit), text, cutUTF8(doc.text, verificationTextLimit))
	link := findLink(text, doc, senderSite(m.From), code)
	return NewVerification(code, link)
}

// cutUTF8 returns at most the first n bytes of s, cut at a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// senderSite is the last two labels of the sender's mail domain (three when
// the second-level label is short, as in "example.co.uk"), "" for a number.
func senderSite(from string) string {
	at := strings.LastIndexByte(from, '@')
	if at < 0 {
		return ""
	}
	return site(strings.ToLower(strings.Trim(from[at+1:], "> ")))
}

// site approximates a host's registrable domain without a public suffix list.
func site(host string) string {
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	n := 2
	if len(labels) >= 3 && len(labels[len(labels)-2]) <= 3 && len(labels[len(labels)-1]) == 2 {
		n = 3
	}
	if len(labels) < n {
		return host
	}
	return strings.Join(labels[len(labels)-n:], ".")
}

// fold lowercases s and strips the accents of Latin letters, so that cue
// lists can be written once in plain ASCII ("verificacao", "bestatigen").
func fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch r {
		case 'ß':
			b.WriteString("ss")
		case '’', '‘':
			b.WriteByte('\'')
		default:
			b.WriteRune(foldLatin(r))
		}
	}
	return b.String()
}

// foldLatin maps an accented Latin letter (upper or lower case) to its plain
// lower-case letter, and lowercases anything else.
func foldLatin(r rune) rune {
	switch r {
	case 'à', 'á', 'â', 'ã', 'ä', 'å', 'À', 'Á', 'Â', 'Ã', 'Ä', 'Å':
		return 'a'
	case 'ç', 'Ç':
		return 'c'
	case 'è', 'é', 'ê', 'ë', 'È', 'É', 'Ê', 'Ë':
		return 'e'
	case 'ì', 'í', 'î', 'ï', 'Ì', 'Í', 'Î', 'Ï':
		return 'i'
	case 'ñ', 'Ñ':
		return 'n'
	case 'ò', 'ó', 'ô', 'õ', 'ö', 'Ò', 'Ó', 'Ô', 'Õ', 'Ö':
		return 'o'
	case 'ù', 'ú', 'û', 'ü', 'Ù', 'Ú', 'Û', 'Ü':
		return 'u'
	case 'ý', 'ÿ', 'Ý':
		return 'y'
	case '\u00a0':
		return ' '
	}
	return unicode.ToLower(r)
}

// anyOf reports whether match(s, p) holds for one of the patterns, with
// match one of strings.Contains, strings.HasPrefix or strings.HasSuffix.
func anyOf(s string, patterns []string, match func(s, p string) bool) bool {
	for _, p := range patterns {
		if match(s, p) {
			return true
		}
	}
	return false
}
