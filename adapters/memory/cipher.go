package memory

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"sync"
)

// Cipher is a ports.Cipher fake: it does not encrypt, but it binds a value
// to its aad and records the key generation that "sealed" it, so tests can
// exercise tampering, moving values between rows and key rotation.
type Cipher struct {
	mu  sync.Mutex
	gen byte
}

// Rotate moves sealing to a new key generation; older values still open.
func (c *Cipher) Rotate() {
	c.mu.Lock()
	c.gen++
	c.mu.Unlock()
}

func (c *Cipher) Seal(plaintext, aad []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := sha256.Sum256(aad)
	return append(append([]byte{c.gen}, sum[:8]...), plaintext...), nil
}

func (c *Cipher) Open(sealed, aad []byte) ([]byte, error) {
	sum := sha256.Sum256(aad)
	if len(sealed) < 9 || !bytes.Equal(sealed[1:9], sum[:8]) {
		return nil, errors.New("memory cipher: the value does not open")
	}
	return append([]byte(nil), sealed[9:]...), nil
}

// Digest is a keyed hash of data under the current generation.
func (c *Cipher) Digest(data []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := sha256.Sum256(append([]byte{c.gen}, data...))
	return sum[:]
}

func (c *Cipher) Current(sealed []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(sealed) > 0 && sealed[0] == c.gen
}
