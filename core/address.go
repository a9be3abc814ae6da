package core

import (
	"net/mail"
	"strings"
)

// MaxLocalPartLength is RFC 5321's limit on the part before the @.
const MaxLocalPartLength = 64

// NormalizeLocalPart checks an inbox's local part and returns it lower-cased.
// Inbox addresses are kept to a conservative alphabet so that every mail
// system can route them: letters, digits, '.', '_', '+' and '-'.
func NormalizeLocalPart(field, local string) (string, error) {
	local = strings.ToLower(strings.TrimSpace(local))
	switch {
	case local == "":
		return "", Invalid(field, "This field may not be blank.")
	case len(local) > MaxLocalPartLength:
		return "", Invalid(field, "Ensure this field has no more than %d characters.", MaxLocalPartLength)
	case strings.HasPrefix(local, ".") || strings.HasSuffix(local, ".") || strings.Contains(local, ".."):
		return "", Invalid(field, "Dots may not start or end the address or stand twice in a row.")
	}
	for _, r := range local {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("._+-", r)) {
			return "", Invalid(field, "Use only letters, digits, '.', '_', '+' and '-'.")
		}
	}
	return local, nil
}

// NormalizeDomain lower-cases a domain name and strips a trailing dot.
func NormalizeDomain(domain string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(domain)), ".")
}

// SplitAddress splits a bare address at its last '@'.
func SplitAddress(addr string) (local, domain string, ok bool) {
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 || at == len(addr)-1 {
		return "", "", false
	}
	return addr[:at], addr[at+1:], true
}

// NormalizeEmail checks a bare email address (no display name) and returns it
// with the domain lower-cased. Line breaks are refused, so an address can
// never smuggle a header into a message.
func NormalizeEmail(field, addr string) (string, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return "", Invalid(field, "This field may not be blank.")
	}
	if err := CheckVisible(field, addr); err != nil {
		return "", err
	}
	if strings.ContainsAny(addr, "\r\n\x00<>,;") || len(addr) > 254 {
		return "", Invalid(field, "Enter a valid email address.")
	}
	parsed, err := mail.ParseAddress(addr)
	if err != nil || parsed.Name != "" || parsed.Address != addr {
		return "", Invalid(field, "Enter a valid email address.")
	}
	local, domain, ok := SplitAddress(parsed.Address)
	domain = NormalizeDomain(domain)
	// A dotless domain is routable only as "localhost".
	if !ok || !strings.Contains(domain, ".") && domain != "localhost" {
		return "", Invalid(field, "Enter a valid email address.")
	}
	return local + "@" + domain, nil
}

// MaxDisplayNameLength bounds the name given with an address.
const MaxDisplayNameLength = 200

// NormalizeMailbox checks one recipient as a caller may write it: a bare
// address, or "Name <address>" (RFC 5322 name-addr, the name quoted or
// not). It returns the display name ("" for none) and the normalized address.
func NormalizeMailbox(field, mailbox string) (name, addr string, err error) {
	mailbox = strings.TrimSpace(mailbox)
	if err := CheckVisible(field, mailbox); err != nil {
		return "", "", err
	}
	if !strings.HasSuffix(mailbox, ">") {
		addr, err = NormalizeEmail(field, mailbox)
		return "", addr, err
	}
	parsed, perr := mail.ParseAddress(mailbox)
	if perr != nil || len(parsed.Name) > MaxDisplayNameLength {
		return "", "", Invalid(field, "Enter a valid email address, or a name and an address such as Ada <ada@example.com>.")
	}
	if err := CheckVisible(field, parsed.Name); err != nil { // an encoded word may decode to one
		return "", "", err
	}
	addr, err = NormalizeEmail(field, parsed.Address)
	return strings.TrimSpace(parsed.Name), addr, err
}
