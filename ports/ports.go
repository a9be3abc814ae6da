// Package ports declares what the use cases need from the world: stores,
// the clock, identifiers, the vault cipher, mail relays and telephony. The
// adapters implement these interfaces; the app depends on nothing else.
package ports

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
)

// Clock tells the time. Stores keep microseconds, so callers truncate.
type Clock interface {
	Now() time.Time
}

// IDs mints identifiers.
type IDs interface {
	NewUUID() string
}

// Cipher seals vault values. A sealed value records which key sealed it, so
// values sealed under a retired key can still be opened while a rotation runs.
// aad binds a value to where it is stored: a sealed value moved to another
// row or field fails to open.
type Cipher interface {
	Seal(plaintext, aad []byte) ([]byte, error)
	Open(sealed, aad []byte) ([]byte, error)
	// Current reports whether sealed was sealed under the current key.
	Current(sealed []byte) bool
	// Digest is a keyed hash of data (HMAC under the current key): equal
	// data gives equal digests, and a digest shows nothing of its data to
	// whoever lacks the key (idempotency fingerprints of vault requests).
	Digest(data []byte) []byte
}

// PasswordHasher hashes account passwords (slowly, with a salt).
type PasswordHasher interface {
	Hash(password string) (string, error)
	// Verify reports whether password matches encoded. It takes about as long
	// for an empty encoded hash as for a real one, so that callers can use it
	// to hide whether an account exists.
	Verify(password, encoded string) bool
}

// OneTimePasswords computes the codes of time-based one-time passwords
// (RFC 6238) for the keys password entries keep.
type OneTimePasswords interface {
	// TOTP is the code of the period t falls in.
	TOTP(key core.TOTPKey, t time.Time) (string, error)
}

// Pinger answers whether a dependency is reachable.
type Pinger interface {
	Ping(ctx context.Context) error
}

// SchemaStatus answers whether the database's schema is current.
type SchemaStatus interface {
	// PendingMigrations counts the migrations this build knows that the
	// database has not applied yet.
	PendingMigrations(ctx context.Context) (int, error)
}
