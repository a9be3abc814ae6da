// Package argon2id hashes account passwords with Argon2id (RFC 9106), kept
// in the PHC string format that other tools read:
//
//	$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>
//
// The parameters travel with each hash, so raising them later leaves
// existing hashes verifiable.
package argon2id

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Params are Argon2id's cost parameters.
type Params struct {
	MemoryKiB uint32
	Time      uint32
	Threads   uint8
}

// DefaultParams are OWASP's recommendation (19 MiB, two passes, one
// thread): tens of milliseconds per hash on a server.
var DefaultParams = Params{MemoryKiB: 19 * 1024, Time: 2, Threads: 1}

const (
	saltLen = 16
	keyLen  = 32
	// maxMemoryKiB refuses hashes that would make one check cost more than 1 GiB.
	maxMemoryKiB = 1 << 20
)

var b64 = base64.RawStdEncoding

// Hasher is a ports.PasswordHasher.
type Hasher struct {
	params Params
}

// New makes a hasher that hashes with p.
func New(p Params) *Hasher {
	return &Hasher{params: p}
}

// Hash salts and hashes a password.
func (h *Hasher) Hash(password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("argon2id: reading a salt: %w", err)
	}
	p := h.params
	key := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Verify reports whether password matches encoded. An empty or malformed
// encoded hash is checked against a decoy instead (this hasher's parameters,
// a zero salt and key), which takes as long as a real check and never
// matches, so that a missing account costs what a wrong password costs.
// The decoy is no hash of anything: working it out at start-up would fill
// Argon2's memory (19 MiB) once for nothing.
func (h *Hasher) Verify(password, encoded string) bool {
	p, salt, want, ok := parse(encoded)
	if !ok {
		p, salt, want = h.params, make([]byte, saltLen), make([]byte, keyLen)
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1 && ok
}

// parse reads a PHC string; ok is false for anything but a sane argon2id hash.
func parse(encoded string) (p Params, salt, key []byte, ok bool) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return Params{}, nil, nil, false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &p.Threads); err != nil {
		return Params{}, nil, nil, false
	}
	salt, errSalt := b64.DecodeString(parts[4])
	key, errKey := b64.DecodeString(parts[5])
	if errSalt != nil || errKey != nil || len(salt) < 8 || len(key) < 16 || len(key) > 64 ||
		p.Time < 1 || p.Threads < 1 || p.MemoryKiB < 8*uint32(p.Threads) || p.MemoryKiB > maxMemoryKiB {
		return Params{}, nil, nil, false
	}
	return p, salt, key, true
}
