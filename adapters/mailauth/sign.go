package mailauth

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"sync"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// RSABits is the size of the keys made for custom domains: what receivers
// expect today (RFC 8301 asks for at least 1024, and 2048 fits a TXT
// record). Ed25519 (RFC 8463) is not added beside it: the large receivers
// do not check it yet, so a second signature would only cost.
const RSABits = 2048

// SignedFields are the header fields every signature covers: those RFC
// 6376 §5.4.1 recommends that our composer writes. Each is listed twice:
// the second, absent, instance "oversigns" it (§8.15), so a field added
// in transit (a second From, a new Subject) breaks the signature.
var SignedFields = func() []string {
	var out []string
	for _, f := range []string{"From", "Reply-To", "To", "Cc", "Subject", "Date", "Message-ID",
		"In-Reply-To", "References", "MIME-Version", "Content-Type", "Content-Transfer-Encoding"} {
		out = append(out, f, f)
	}
	return out
}()

// Signer makes DKIM keys and signatures.
type Signer struct {
	// Parsed keys, by their DER bytes: parsing an RSA key costs about as
	// much as a tenth of a signature. Bounded by maxParsedKeys.
	mu   sync.Mutex
	keys map[string]crypto.Signer
}

const maxParsedKeys = 1000

var _ ports.DKIMSigner = (*Signer)(nil)

// NewSigner makes a signer.
func NewSigner() *Signer { return &Signer{keys: map[string]crypto.Signer{}} }

// NewKey makes an RSA-2048 key pair.
func (s *Signer) NewKey(selector string) (ports.DKIMKeyPair, error) {
	key, err := rsa.GenerateKey(rand.Reader, RSABits)
	if err != nil {
		return ports.DKIMKeyPair{}, err
	}
	return KeyPair(selector, key)
}

// KeyPair describes a private key (RSA or Ed25519) as a DKIM key pair.
func KeyPair(selector string, key crypto.Signer) (ports.DKIMKeyPair, error) {
	private, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return ports.DKIMKeyPair{}, err
	}
	pub := core.DKIMKey{Selector: selector, Active: true}
	switch k := key.Public().(type) {
	case *rsa.PublicKey:
		der, err := x509.MarshalPKIXPublicKey(k)
		if err != nil {
			return ports.DKIMKeyPair{}, err
		}
		pub.Algorithm, pub.PublicKey = "rsa", base64.StdEncoding.EncodeToString(der)
	case ed25519.PublicKey:
		pub.Algorithm, pub.PublicKey = "ed25519", base64.StdEncoding.EncodeToString(k)
	default:
		return ports.DKIMKeyPair{}, fmt.Errorf("a %T key cannot sign DKIM", k)
	}
	return ports.DKIMKeyPair{Public: pub, Private: private}, nil
}

// ParsePrivateKeyPEM reads a PEM private key: PKCS #1 ("RSA PRIVATE KEY")
// or PKCS #8 ("PRIVATE KEY"), RSA or Ed25519. (Go itself refuses RSA keys
// under 1024 bits, as RFC 8301 does.)
func ParsePrivateKeyPEM(selector string, data []byte) (ports.DKIMKeyPair, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return ports.DKIMKeyPair{}, errors.New("no PEM block found")
	}
	var key any
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return ports.DKIMKeyPair{}, fmt.Errorf("a PEM block of type %q is not a private key (want RSA PRIVATE KEY or PRIVATE KEY)", block.Type)
	}
	if err != nil {
		return ports.DKIMKeyPair{}, err
	}
	switch key.(type) {
	case *rsa.PrivateKey, ed25519.PrivateKey:
		return KeyPair(selector, key.(crypto.Signer))
	}
	return ports.DKIMKeyPair{}, fmt.Errorf("a %T cannot sign DKIM (want RSA or Ed25519)", key)
}

// Sign signs raw (relaxed/relaxed canonicalization, SHA-256) and returns
// it with the DKIM-Signature field on top.
func (s *Signer) Sign(raw []byte, domain, selector string, private []byte) ([]byte, error) {
	key, err := s.parsed(private)
	if err != nil {
		return nil, err
	}
	signer, err := dkim.NewSigner(&dkim.SignOptions{
		Domain:                 domain,
		Selector:               selector,
		Signer:                 key,
		HeaderCanonicalization: dkim.CanonicalizationRelaxed,
		BodyCanonicalization:   dkim.CanonicalizationRelaxed,
		HeaderKeys:             SignedFields,
	})
	if err != nil {
		return nil, err
	}
	if _, err := signer.Write(raw); err != nil {
		signer.Close()
		return nil, err
	}
	if err := signer.Close(); err != nil {
		return nil, err
	}
	field := signer.Signature()
	var out bytes.Buffer
	out.Grow(len(field) + len(raw))
	out.WriteString(field)
	out.Write(raw)
	return out.Bytes(), nil
}

func (s *Signer) parsed(private []byte) (crypto.Signer, error) {
	s.mu.Lock()
	key, ok := s.keys[string(private)]
	s.mu.Unlock()
	if ok {
		return key, nil
	}
	parsed, err := x509.ParsePKCS8PrivateKey(private)
	if err != nil {
		return nil, fmt.Errorf("reading the DKIM key: %w", err)
	}
	key, ok = parsed.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a %T cannot sign", parsed)
	}
	s.mu.Lock()
	if len(s.keys) >= maxParsedKeys {
		clear(s.keys)
	}
	s.keys[string(private)] = key
	s.mu.Unlock()
	return key, nil
}
