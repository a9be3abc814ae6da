package core

import (
	"crypto/rand"
	"fmt"
	"io"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"
)

// Identity is a named agent persona of an account.
type Identity struct {
	ID        string // uuid
	AccountID string
	Name      string
	Inbox     string // the address of its first inbox
	Phone     string // E.164; empty until provisioned
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Inbox is an email address that receives mail for an identity.
type Inbox struct {
	ID         int64
	UUID       string
	AccountID  string
	IdentityID string
	Email      string
	CreatedAt  time.Time
}

// MaxIdentityNameLength bounds an identity's name.
const MaxIdentityNameLength = 100

// ValidateIdentityName checks a name given by a caller.
func ValidateIdentityName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return Invalid("name", "This field may not be blank.")
	case utf8.RuneCountInString(name) > MaxIdentityNameLength:
		return Invalid("name", "Ensure this field has no more than %d characters.", MaxIdentityNameLength)
	}
	return CheckVisible("name", name)
}

var nameAdjectives = []string{
	"amber", "brisk", "calm", "clever", "crisp", "eager", "gentle", "golden",
	"happy", "keen", "lively", "lucky", "mellow", "nimble", "quiet", "rapid",
	"silver", "steady", "sunny", "swift", "tidy", "vivid", "witty", "zesty",
}

var nameNouns = []string{
	"badger", "beacon", "comet", "falcon", "harbor", "heron", "lark", "lynx",
	"maple", "meadow", "otter", "owl", "pine", "quill", "raven", "river",
	"robin", "sparrow", "summit", "thistle", "tide", "wren", "willow", "yarrow",
}

// GenerateIdentityName draws a readable name such as "brisk-otter-4821".
// Uniqueness within the account is the caller's loop to close.
func GenerateIdentityName(random io.Reader) (string, error) {
	a, err := randomIndex(random, len(nameAdjectives))
	if err != nil {
		return "", err
	}
	n, err := randomIndex(random, len(nameNouns))
	if err != nil {
		return "", err
	}
	d, err := randomIndex(random, 9000)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s-%s-%d", nameAdjectives[a], nameNouns[n], 1000+d), nil
}

// randomIndex draws a uniform index below n from random.
func randomIndex(random io.Reader, n int) (int, error) {
	v, err := rand.Int(random, big.NewInt(int64(n)))
	if err != nil {
		return 0, fmt.Errorf("reading random bytes: %w", err)
	}
	return int(v.Int64()), nil
}

// GeneratedLocalPart is the local part of an address made for an identity
// named name: the name's slug on the first attempt (attempt 0), then the
// slug with a random suffix, for when the plain one is taken.
func GeneratedLocalPart(name string, attempt int, random io.Reader) (string, error) {
	slug := slugify(name)
	if attempt == 0 {
		return slug, nil
	}
	suffix, err := RandomString(random, 4, "abcdefghijkmnpqrstuvwxyz23456789")
	if err != nil {
		return "", err
	}
	return slug + "-" + suffix, nil
}

// slugify keeps letters and digits of a name, joined by single hyphens.
func slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	if b.Len() == 0 {
		return "agent"
	}
	return b.String()
}

// InboxMayGo decides whether one of an identity's inboxes may be deleted,
// given how many it has: not its last one, since an identity is reached at
// its address (the spec's Identity.inbox); deleting the identity removes
// that one. Stores ask it under the identity's lock.
func InboxMayGo(inboxes int) error {
	if inboxes <= 1 {
		return Conflict("This is the identity's only inbox; delete the identity to remove it.")
	}
	return nil
}
