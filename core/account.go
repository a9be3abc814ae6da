package core

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"time"
)

// Account owns identities, keys and everything below them.
type Account struct {
	ID                 string // uuid
	Email              string
	PasswordHash       string // encoded argon2id hash; empty when no password is set
	SubscriptionActive bool
	CreatedAt          time.Time
}

// KeyType says what an API key may reach.
type KeyType string

const (
	KeyManagement KeyType = "management" // the whole account
	KeyIdentity   KeyType = "identity"   // one identity of the account
)

// Key prefixes of spec §5; the rest of a key is keySecretChars random characters.
const (
	ManagementKeyPrefix = "svc_mgmt_"
	IdentityKeyPrefix   = "svc_id_"
	keySecretChars      = 40
	// visibleSecretChars is how much of the random part the stored prefix keeps,
	// enough to tell keys apart in a list and far too little to guess the rest.
	visibleSecretChars = 4
)

// KeyOrigin says how a key was made, so that an account can tell, say,
// the keys made with a password sign-in's token from the others.
type KeyOrigin string

const (
	OriginAPI     KeyOrigin = "api"     // through the API, with a key
	OriginJWT     KeyOrigin = "jwt"     // through the API, with an access token of a password sign-in
	OriginConsole KeyOrigin = "console" // on the console
	OriginCLI     KeyOrigin = "cli"     // by the operator's command line (account create, key create)
	OriginDevice  KeyOrigin = "device"  // by a device login
	OriginUnknown KeyOrigin = "unknown" // made before origins were recorded
)

// APIKey is a stored key: never the key itself, only its hash and a prefix.
type APIKey struct {
	ID         int64
	AccountID  string
	Type       KeyType
	IdentityID string // set for identity keys
	// CanProvision lets an identity key buy a phone number for its identity.
	CanProvision bool
	// CanSend lets an identity key send mail and texts itself; without it
	// the key may only draft (management keys always may).
	CanSend    bool
	Name       string
	Prefix     string
	Hash       []byte
	Origin     KeyOrigin
	CreatedAt  time.Time
	LastUsedAt *time.Time
}

// MayDeleteKey decides whether k may be deleted while its account has
// managementKeys management keys, k among them: never the last one, so
// that an account cannot lock itself out of its own API. Stores ask it with
// the account locked, so that two deletes are decided one after the other.
func MayDeleteKey(k APIKey, managementKeys int) error {
	if k.Type == KeyManagement && managementKeys < 2 {
		return Conflict("This is the account's last management key; create another before deleting it.")
	}
	return nil
}

// NewKey is a freshly minted key: the record to store and the secret to show once.
type NewKey struct {
	Record APIKey
	Secret string
}

const keyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// MintKey draws a new key of type t from random (a crypto source) and fills
// the record's Type, Prefix and Hash.
func MintKey(t KeyType, random io.Reader) (NewKey, error) {
	secret, err := RandomString(random, keySecretChars, keyAlphabet)
	if err != nil {
		return NewKey{}, err
	}
	full := keyPrefixFor(t) + secret
	return NewKey{
		Record: APIKey{Type: t, Prefix: full[:len(keyPrefixFor(t))+visibleSecretChars], Hash: HashKey(full)},
		Secret: full,
	}, nil
}

func keyPrefixFor(t KeyType) string {
	if t == KeyManagement {
		return ManagementKeyPrefix
	}
	return IdentityKeyPrefix
}

// ParseKeyType reports the type a presented key claims by its prefix, and
// whether it has the shape of a key at all.
func ParseKeyType(presented string) (KeyType, bool) {
	var t KeyType
	var rest string
	switch {
	case strings.HasPrefix(presented, ManagementKeyPrefix):
		t, rest = KeyManagement, presented[len(ManagementKeyPrefix):]
	case strings.HasPrefix(presented, IdentityKeyPrefix):
		t, rest = KeyIdentity, presented[len(IdentityKeyPrefix):]
	default:
		return "", false
	}
	if len(rest) < 32 || len(rest) > 128 {
		return "", false
	}
	for i := 0; i < len(rest); i++ {
		if !strings.ContainsRune(keyAlphabet, rune(rest[i])) {
			return "", false
		}
	}
	return t, true
}

// HashKey is the stored form of a key. Keys carry over 200 bits of entropy,
// so a fast hash is enough: there is nothing to brute-force.
func HashKey(presented string) []byte {
	sum := sha256.Sum256([]byte(presented))
	return sum[:]
}

// KeyMatches compares a presented key with a stored hash in constant time.
func KeyMatches(presented string, stored []byte) bool {
	return subtle.ConstantTimeCompare(HashKey(presented), stored) == 1
}

// RandomString draws n characters of alphabet from random without modulo bias.
func RandomString(random io.Reader, n int, alphabet string) (string, error) {
	if len(alphabet) == 0 || len(alphabet) > 256 {
		return "", fmt.Errorf("alphabet of %d characters", len(alphabet))
	}
	// Reject bytes at or above the largest multiple of len(alphabet).
	limit := 256 - 256%len(alphabet)
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4+8)
	for len(out) < n {
		if _, err := io.ReadFull(random, buf); err != nil {
			return "", fmt.Errorf("reading random bytes: %w", err)
		}
		for _, b := range buf {
			if int(b) < limit {
				out = append(out, alphabet[int(b)%len(alphabet)])
				if len(out) == n {
					break
				}
			}
		}
	}
	return string(out), nil
}

// RandomToken is an opaque URL-safe token of n random bytes.
func RandomToken(random io.Reader, n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Act is something an account does that costs the operator: most need an
// active subscription, and some room under quotas (quotasOf).
type Act string

const (
	ActCreateIdentity Act = "Creating an identity"
	ActCreateInbox    Act = "Creating an inbox"
	ActBuyNumber      Act = "Buying a phone number"
	ActAddDomain      Act = "Adding a domain"
	ActSendMail       Act = "Sending mail"
	ActSendSMS        Act = "Sending a text"
	ActPlaceCall      Act = "Placing a call"
	// Acts under quotas alone: an inactive account still receives mail
	// and keeps its vault.
	ActReceiveMail    Act = "Receiving mail"
	ActUpload         Act = "Uploading an attachment"
	ActStoreVaultItem Act = "Storing a password or secret"
	ActSaveDraft      Act = "Saving a draft"
)

// NeedsSubscription says whether act is one that only an active
// subscription may do.
func (act Act) NeedsSubscription() bool {
	switch act {
	case ActReceiveMail, ActUpload, ActStoreVaultItem, ActSaveDraft:
		return false
	}
	return true
}

// Allows says whether the account may do act: only with an active
// subscription when act needs one (402 otherwise).
func (a Account) Allows(act Act) error {
	if act.NeedsSubscription() && !a.SubscriptionActive {
		return PaymentRequired("%s needs an active subscription.", act)
	}
	return nil
}
