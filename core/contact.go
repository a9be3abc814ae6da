package core

import (
	"strings"
	"time"
	"unicode/utf8"
)

// ContactSource says how a contact came to be.
type ContactSource string

const (
	ContactAuto   ContactSource = "auto"   // recorded when a new correspondent wrote
	ContactManual ContactSource = "manual" // created through the API
)

// ParseContactSource accepts "auto" and "manual".
func ParseContactSource(s string) (ContactSource, bool) {
	switch ContactSource(s) {
	case ContactAuto, ContactManual:
		return ContactSource(s), true
	}
	return "", false
}

// Contact is someone an identity corresponds with.
type Contact struct {
	ID          string // uuid
	AccountID   string
	IdentityID  string
	Email       string
	DisplayName string
	Nickname    string
	PhoneNumber string // E.164
	Source      ContactSource
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Highlights are a search hit's snippets (Highlights); nil outside a search.
	Highlights []string
}

// SearchTexts are what a contact search reads, in the order its highlights
// show them: the names, the email, the number.
func (c Contact) SearchTexts() []string {
	return []string{strings.TrimSpace(c.DisplayName + " " + c.Nickname), c.Email, c.PhoneNumber}
}

// MaxContactNameLength bounds display names and nicknames.
const MaxContactNameLength = 255

// NormalizeContact checks a contact's fields and returns it with its email
// and phone number in canonical form. A contact needs an email or a phone number.
func NormalizeContact(c Contact) (Contact, error) {
	var p Problems
	if c.Email != "" {
		email, err := NormalizeEmail("email", c.Email)
		if !p.Merge(err) {
			c.Email = email
		}
	}
	if c.PhoneNumber != "" {
		if !IsE164(c.PhoneNumber) {
			p.Add("phone_number", E164Hint)
		}
	}
	for field, v := range map[string]string{"display_name": c.DisplayName, "nickname": c.Nickname} {
		if utf8.RuneCountInString(v) > MaxContactNameLength {
			p.Add(field, "Ensure this field has no more than %d characters.", MaxContactNameLength)
		} else {
			p.Merge(CheckVisible(field, v))
		}
	}
	if c.Email == "" && c.PhoneNumber == "" && !p.Has("email") && !p.Has("phone_number") {
		p.Add(NonFieldErrors, "A contact needs an email or a phone_number.")
	}
	return c, p.Err()
}

// E164Hint is the message for a number that is not E.164.
const E164Hint = "Enter a phone number in E.164 form, such as +14155550100."

// ImpossibleNumberHint is the message for an E.164 number that its
// country's numbering plan does not allow (+1415: too short).
const ImpossibleNumberHint = "%s is not a possible phone number: its country's numbering plan allows no number of that length."

// IsE164 reports whether s is an E.164 number: '+', a non-zero digit, and at
// most fifteen digits in all.
func IsE164(s string) bool {
	if len(s) < 3 || len(s) > 16 || s[0] != '+' || s[1] == '0' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Correspondent is someone who wrote to an identity: from an email address
// (with the display name they gave) to one of its inboxes, or from a phone
// number to its number.
type Correspondent struct {
	AccountID, IdentityID string
	Email, Name           string
	// Inbox is the address the mail came to: the identity writing from
	// its own address is not its correspondent.
	Inbox string
	Phone string
}

// Contact is the auto contact to record for w, under id, or false when w
// gives nothing worth recording: the identity itself, or an address that
// cannot be a contact's. A delivery never fails over its sender. Whether
// the identity knows w already is for the store to say as it inserts
// (ContactStore.RecordCorrespondent): contacts are unique per email and per
// phone number within an identity.
func (w Correspondent) Contact(id string, now time.Time) (Contact, bool) {
	if w.Email != "" && strings.EqualFold(w.Email, w.Inbox) {
		return Contact{}, false
	}
	c, err := NormalizeContact(Contact{ID: id, AccountID: w.AccountID, IdentityID: w.IdentityID, Email: w.Email,
		DisplayName: w.Name, PhoneNumber: w.Phone, Source: ContactAuto, CreatedAt: now, UpdatedAt: now})
	return c, err == nil
}
