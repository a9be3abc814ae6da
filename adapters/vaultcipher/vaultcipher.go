// Package vaultcipher seals vault values with AES-256-GCM under a keyring.
//
// A sealed value is: version (1 byte) | key id (4 bytes) | nonce (12 bytes) |
// ciphertext and tag. The key id is the start of the key's SHA-256, so a
// value names the key that sealed it and a rotation can run while values
// sealed under the old key are still being read.
//
// The keyring comes from configuration (CALLSIGN_VAULT_KEY, plus
// CALLSIGN_VAULT_PREVIOUS_KEYS during a rotation) or from a key file in the
// data directory: one base64 key per line, the first one current. A
// file-backed keyring notices when the file changes (checked at most once a
// second, and at once when it meets a key id it does not know), so
// `callsign vault rotate-key` can add a key to a running service.
package vaultcipher

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

const (
	version   = 1
	idLen     = 4
	nonceLen  = 12
	headerLen = 1 + idLen + nonceLen
	// KeySize is the length of a vault key: AES-256.
	KeySize = 32
	// ReloadInterval bounds how stale a file-backed keyring can be.
	ReloadInterval = time.Second
)

// ErrUnknownKey means a value was sealed under a key this keyring lacks.
var ErrUnknownKey = errors.New("vault: the value was sealed under a key that is not configured")

type key struct {
	id   [idLen]byte
	aead cipher.AEAD
	// digest keys Digest: derived from the key, never the key itself.
	digest []byte
}

// Keyring seals under its current key and opens under any of its keys.
type Keyring struct {
	mu        sync.RWMutex
	keys      []key // keys[0] is current
	file      string
	modTime   time.Time
	checkedAt time.Time
}

// FromKeys makes a keyring from configured keys: current first.
func FromKeys(current []byte, previous ...[]byte) (*Keyring, error) {
	keys, err := makeKeys(append([][]byte{current}, previous...))
	if err != nil {
		return nil, err
	}
	return &Keyring{keys: keys}, nil
}

// OpenFile loads the keyring file at path, creating it with a fresh key
// (mode 0600) when it does not exist yet.
func OpenFile(path string) (*Keyring, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		k, err := NewKey()
		if err != nil {
			return nil, err
		}
		// Two processes starting together must not each make a key: the
		// first file in place wins, and both read it back.
		if err := writeKeyFile(path, [][]byte{k}, false); err != nil {
			return nil, err
		}
	}
	kr := &Keyring{file: path}
	if err := kr.reload(true); err != nil {
		return nil, err
	}
	return kr, nil
}

// NewKey draws a fresh key from the operating system's crypto source.
func NewKey() ([]byte, error) {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	return k, nil
}

// KeyID is the id a key's sealed values carry, in hex, for messages.
func KeyID(k []byte) string {
	sum := sha256.Sum256(k)
	return fmt.Sprintf("%x", sum[:idLen])
}

// SealedKeyID is the id (as KeyID gives it) of the key that sealed a value,
// so a backup can say which key it needs without holding any key.
func SealedKeyID(sealed []byte) (string, bool) {
	if len(sealed) < headerLen || sealed[0] != version {
		return "", false
	}
	return fmt.Sprintf("%x", sealed[1:1+idLen]), true
}

func makeKeys(raw [][]byte) ([]key, error) {
	keys := make([]key, 0, len(raw))
	for _, k := range raw {
		if len(k) != KeySize {
			return nil, fmt.Errorf("vault: a key has %d bytes; want %d", len(k), KeySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		var kk key
		sum := sha256.Sum256(k)
		copy(kk.id[:], sum[:idLen])
		kk.aead = aead
		mac := hmac.New(sha256.New, k)
		mac.Write([]byte("callsign digest v1"))
		kk.digest = mac.Sum(nil)
		keys = append(keys, kk)
	}
	return keys, nil
}

// reload rereads the key file if it changed since it was read. Without
// force it looks at the file at most once per ReloadInterval.
func (kr *Keyring) reload(force bool) error {
	if kr.file == "" {
		return nil
	}
	kr.mu.RLock()
	fresh := !force && time.Since(kr.checkedAt) < ReloadInterval
	kr.mu.RUnlock()
	if fresh {
		return nil
	}
	kr.mu.Lock()
	defer kr.mu.Unlock()
	kr.checkedAt = time.Now()
	st, err := os.Stat(kr.file)
	if err != nil {
		return fmt.Errorf("vault key file: %w", err)
	}
	if st.ModTime().Equal(kr.modTime) && kr.keys != nil {
		return nil
	}
	raw, err := ReadKeyFile(kr.file)
	if err != nil {
		return err
	}
	keys, err := makeKeys(raw)
	if err != nil {
		return fmt.Errorf("vault key file %s: %w", kr.file, err)
	}
	kr.keys, kr.modTime = keys, st.ModTime()
	return nil
}

// Seal encrypts plaintext under the current key, bound to aad.
func (kr *Keyring) Seal(plaintext, aad []byte) ([]byte, error) {
	if err := kr.reload(false); err != nil {
		return nil, err
	}
	kr.mu.RLock()
	k := kr.keys[0]
	kr.mu.RUnlock()
	out := make([]byte, headerLen, headerLen+len(plaintext)+k.aead.Overhead())
	out[0] = version
	copy(out[1:], k.id[:])
	if _, err := rand.Read(out[1+idLen : headerLen]); err != nil {
		return nil, err
	}
	return k.aead.Seal(out, out[1+idLen:headerLen], plaintext, aad), nil
}

// Open decrypts a sealed value under whichever key sealed it.
func (kr *Keyring) Open(sealed, aad []byte) ([]byte, error) {
	if len(sealed) < headerLen || sealed[0] != version {
		return nil, errors.New("vault: not a sealed value")
	}
	if err := kr.reload(false); err != nil {
		return nil, err
	}
	k, ok := kr.find(sealed[1 : 1+idLen])
	if !ok {
		// Sealed under a key added since the file was read: look again now.
		if err := kr.reload(true); err != nil {
			return nil, err
		}
		if k, ok = kr.find(sealed[1 : 1+idLen]); !ok {
			return nil, ErrUnknownKey
		}
	}
	plain, err := k.aead.Open(nil, sealed[1+idLen:headerLen], sealed[headerLen:], aad)
	if err != nil {
		return nil, errors.New("vault: the value does not open (tampered, moved, or wrong key)")
	}
	return plain, nil
}

func (kr *Keyring) find(id []byte) (key, bool) {
	kr.mu.RLock()
	defer kr.mu.RUnlock()
	for _, k := range kr.keys {
		if bytes.Equal(k.id[:], id) {
			return k, true
		}
	}
	return key{}, false
}

// Digest is an HMAC-SHA256 of data under a key derived from the current
// key: a stable stand-in for data that shows nothing of it without the key.
func (kr *Keyring) Digest(data []byte) []byte {
	_ = kr.reload(false)
	kr.mu.RLock()
	k := kr.keys[0].digest
	kr.mu.RUnlock()
	mac := hmac.New(sha256.New, k)
	mac.Write(data)
	return mac.Sum(nil)
}

// Current reports whether sealed was sealed under the current key.
func (kr *Keyring) Current(sealed []byte) bool {
	_ = kr.reload(false)
	kr.mu.RLock()
	defer kr.mu.RUnlock()
	return len(sealed) >= headerLen && bytes.Equal(sealed[1:1+idLen], kr.keys[0].id[:])
}

// ReadKeyFile reads the keys of a key file, current first.
func ReadKeyFile(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("vault key file: %w", err)
	}
	var keys [][]byte
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(k) != KeySize {
			return nil, fmt.Errorf("vault key file %s, line %d: not a base64 %d-byte key", path, n+1, KeySize)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("vault key file %s holds no key", path)
	}
	return keys, nil
}

// WriteKeyFile replaces the key file atomically (mode 0600), current key first.
func WriteKeyFile(path string, keys [][]byte) error { return writeKeyFile(path, keys, true) }

// writeKeyFile writes keys to a temporary file and moves it to path:
// replacing what is there, or only when nothing is (then a file already in
// place is left as it is).
func writeKeyFile(path string, keys [][]byte, replace bool) error {
	var b strings.Builder
	b.WriteString("# Callsign vault keys, base64, current first. Keep this file secret and backed up.\n")
	for _, k := range keys {
		b.WriteString(base64.StdEncoding.EncodeToString(k) + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".vault-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if replace {
		return os.Rename(tmp.Name(), path)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}
