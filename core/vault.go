package core

import (
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// PasswordEntry is a stored login for a site. Password and Notes are
// plaintext here; stores only ever see them sealed.
type PasswordEntry struct {
	ID         string // uuid
	AccountID  string
	IdentityID string
	Domain     string
	Username   string
	Password   string
	Notes      string
	// TOTP is the entry's time-based one-time password key as an otpauth
	// URI (TOTPKey.URI), "" when it has none.
	TOTP      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Secret is a key-value entry such as an API token. Value is plaintext here.
type Secret struct {
	ID         string // uuid
	AccountID  string
	IdentityID string
	Key        string
	Value      string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Limits on vault fields.
const (
	MaxSecretKeyLength   = 255
	MaxSecretValueBytes  = 64 << 10
	MaxPasswordDomainLen = 255
	MaxUsernameLength    = 255
	MaxPasswordLength    = 4096
	MaxNotesBytes        = 64 << 10
)

// ValidatePasswordEntry checks the fields a caller sets on a password entry.
func ValidatePasswordEntry(e PasswordEntry) error {
	var p Problems
	switch {
	case strings.TrimSpace(e.Domain) == "":
		p.Add("domain", "This field may not be blank.")
	case utf8.RuneCountInString(e.Domain) > MaxPasswordDomainLen:
		p.Add("domain", "Ensure this field has no more than %d characters.", MaxPasswordDomainLen)
	case strings.ContainsAny(e.Domain, " \t\r\n"):
		p.Add("domain", "Enter a host name or URL.")
	}
	if utf8.RuneCountInString(e.Username) > MaxUsernameLength {
		p.Add("username", "Ensure this field has no more than %d characters.", MaxUsernameLength)
	}
	switch {
	case e.Password == "":
		p.Add("password", "This field may not be blank.")
	case len(e.Password) > MaxPasswordLength:
		p.Add("password", "Ensure this field has no more than %d characters.", MaxPasswordLength)
	}
	if len(e.Notes) > MaxNotesBytes {
		p.Add("notes", "Ensure this field has no more than %d bytes.", MaxNotesBytes)
	}
	return p.Err()
}

// ValidateSecret checks the fields a caller sets on a secret. An oversized
// value is a validation error (400), like every other field limit.
func ValidateSecret(s Secret) error {
	var p Problems
	switch {
	case s.Key == "":
		p.Add("key", "This field may not be blank.")
	case utf8.RuneCountInString(s.Key) > MaxSecretKeyLength:
		p.Add("key", "Ensure this field has no more than %d characters.", MaxSecretKeyLength)
	case strings.ContainsAny(s.Key, "\r\n\x00"):
		p.Add("key", "Line breaks are not allowed.")
	}
	if len(s.Value) > MaxSecretValueBytes {
		p.Add("value", "Ensure this field has no more than %d bytes.", MaxSecretValueBytes)
	}
	return p.Err()
}

// PasswordSpec is what a generated password must look like.
type PasswordSpec struct {
	Length       int
	Lowercase    bool
	Uppercase    bool
	Digits       bool
	Special      bool
	ExcludeChars string
}

// DefaultPasswordSpec is the generator's default: 20 characters of every class.
var DefaultPasswordSpec = PasswordSpec{Length: 20, Lowercase: true, Uppercase: true, Digits: true, Special: true}

const (
	MinGeneratedPassword = 8
	MaxGeneratedPassword = 128
	lowerChars           = "abcdefghijklmnopqrstuvwxyz"
	upperChars           = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digitChars           = "0123456789"
	specialChars         = "!@#$%^&*()-_=+[]{};:,.<>?/~"
)

// GeneratePassword draws a password from random (a crypto source) with at
// least one character of every enabled class, then shuffles it so the
// guaranteed characters sit anywhere.
func GeneratePassword(spec PasswordSpec, random io.Reader) (string, error) {
	if spec.Length < MinGeneratedPassword || spec.Length > MaxGeneratedPassword {
		return "", Invalid("length", "Ensure this value is between %d and %d.", MinGeneratedPassword, MaxGeneratedPassword)
	}
	if !spec.Lowercase && !spec.Uppercase && !spec.Digits && !spec.Special {
		return "", Invalid(NonFieldErrors, "Enable at least one of lowercase, uppercase, digits and special.")
	}
	var classes []string
	for _, c := range []struct {
		on          bool
		name, chars string
	}{{spec.Lowercase, "lowercase", lowerChars}, {spec.Uppercase, "uppercase", upperChars}, {spec.Digits, "digits", digitChars}, {spec.Special, "special", specialChars}} {
		if !c.on {
			continue
		}
		kept := removeChars(c.chars, spec.ExcludeChars)
		if kept == "" {
			// Every enabled class must appear, so a class emptied by the exclusions is an error.
			return "", Invalid("exclude_chars", "Every %s character is excluded; disable %s instead.", c.name, c.name)
		}
		classes = append(classes, kept)
	}
	out := make([]byte, 0, spec.Length)
	for _, class := range classes {
		ch, err := RandomString(random, 1, class)
		if err != nil {
			return "", err
		}
		out = append(out, ch...)
	}
	all := strings.Join(classes, "")
	rest, err := RandomString(random, spec.Length-len(out), all)
	if err != nil {
		return "", err
	}
	out = append(out, rest...)
	for i := len(out) - 1; i > 0; i-- { // Fisher–Yates
		j, err := randomIndex(random, i+1)
		if err != nil {
			return "", err
		}
		out[i], out[j] = out[j], out[i]
	}
	return string(out), nil
}

func removeChars(chars, exclude string) string {
	if exclude == "" {
		return chars
	}
	var b strings.Builder
	for _, r := range chars {
		if !strings.ContainsRune(exclude, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// DomainHost is the lower-cased host of a password entry's domain, which
// may be a host name or a URL: "https://GitHub.com/login" → "github.com".
// The domain filter compares hosts, so one entry serves every spelling.
func DomainHost(domain string) string {
	d := strings.ToLower(strings.TrimSpace(domain))
	if i := strings.Index(d, "://"); i >= 0 {
		d = d[i+3:]
	}
	if i := strings.IndexAny(d, "/?#"); i >= 0 {
		d = d[:i]
	}
	if i := strings.LastIndexByte(d, '@'); i >= 0 {
		d = d[i+1:]
	}
	if h, _, ok := strings.Cut(d, ":"); ok && !strings.HasPrefix(d, "[") {
		d = h
	}
	return strings.TrimSuffix(d, ".")
}
