// Package snsverify checks Amazon SNS messages as AWS documents it
// (https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html):
// the signature (version 1: SHA1withRSA, version 2: SHA256withRSA) over
// the message's canonical string, with the certificate at its
// SigningCertURL, which must be on an sns.<region>.amazonaws.com host; or
// with one pinned certificate, when then nothing is fetched. It also
// confirms subscriptions, fetching a SubscribeURL on such a host only.
package snsverify

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/callsign/callsign/core"
)

// message is an SNS message's envelope: what the signature covers, and
// how to check it.
type message struct {
	Type             string
	MessageId        string
	Token            string
	TopicArn         string
	Subject          *string // signed only when present
	Message          string
	SubscribeURL     string
	Timestamp        string
	SignatureVersion string
	Signature        string
	SigningCertURL   string
}

// Options configure a Verifier.
type Options struct {
	// TopicARNs are the topics we take messages from (CALLSIGN_SNS_TOPIC_ARNS).
	TopicARNs []string
	// CertPEM, when set, is the one signing certificate: the message's
	// SigningCertURL is then not used at all (CALLSIGN_SNS_CERT_FILE).
	CertPEM []byte
	// Client fetches certificates and subscription confirmations; cmd
	// gives one that dials through the outbound-destination policy.
	Client *http.Client
}

// Verifier checks SNS messages.
type Verifier struct {
	topics []string
	pinned *x509.Certificate
	client *http.Client

	mu    sync.Mutex
	certs map[string]*x509.Certificate // by SigningCertURL, at most maxCerts
}

const (
	// maxCerts bounds the cached certificates: SNS signs with one per
	// region at a time, and a few while it rotates.
	maxCerts = 16
	// maxFetch bounds a certificate or confirmation answer read.
	maxFetch = 64 << 10
	// fetchTimeout bounds one fetch.
	fetchTimeout = 10 * time.Second
)

// snsHost is the only kind of host a certificate or a subscription
// confirmation is fetched from.
var snsHost = regexp.MustCompile(`^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$`)

// New builds a verifier; it fails when the pinned PEM holds no certificate.
func New(o Options) (*Verifier, error) {
	v := &Verifier{topics: o.TopicARNs, client: o.Client, certs: map[string]*x509.Certificate{}}
	if v.client == nil {
		v.client = http.DefaultClient
	}
	if len(o.CertPEM) > 0 {
		c, err := parseCert(o.CertPEM)
		if err != nil {
			return nil, fmt.Errorf("the SNS certificate file: %w", err)
		}
		v.pinned = c
	}
	return v, nil
}

func parseCert(pemBytes []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

var (
	errUnreadable = core.Forbidden("Not an SNS message.")
	errTopic      = core.Forbidden("The SNS topic is not one this service takes messages from.")
	errSignature  = core.Forbidden("The SNS signature does not verify.")
	errCertURL    = core.Forbidden("The SNS signing certificate is not on an sns.<region>.amazonaws.com host.")
)

// Verify checks an SNS message (its body as posted). Every refusal is
// Forbidden; a certificate that cannot be fetched is Unavailable (SNS
// retries).
func (v *Verifier) Verify(ctx context.Context, body []byte) error {
	var m message
	if err := json.Unmarshal(body, &m); err != nil || m.Type == "" || m.Signature == "" {
		return errUnreadable
	}
	if !slices.Contains(v.topics, m.TopicArn) {
		return errTopic
	}
	var hash crypto.Hash
	switch m.SignatureVersion {
	case "1":
		hash = crypto.SHA1
	case "2":
		hash = crypto.SHA256
	default:
		return errSignature
	}
	sig, err := base64.StdEncoding.DecodeString(m.Signature)
	if err != nil {
		return errSignature
	}
	cert, err := v.cert(ctx, m.SigningCertURL)
	if err != nil {
		return err
	}
	key, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return errSignature
	}
	if err := rsa.VerifyPKCS1v15(key, hash, digest(hash, canonical(m)), sig); err != nil {
		return errSignature
	}
	return nil
}

func digest(h crypto.Hash, s []byte) []byte {
	if h == crypto.SHA1 {
		d := sha1.Sum(s)
		return d[:]
	}
	d := sha256.Sum256(s)
	return d[:]
}

// canonical is the string SNS signs: "Name\nValue\n" for each field its
// type signs, in this order.
func canonical(m message) []byte {
	var b strings.Builder
	add := func(name, value string) { b.WriteString(name + "\n" + value + "\n") }
	add("Message", m.Message)
	add("MessageId", m.MessageId)
	if m.Type == "Notification" {
		if m.Subject != nil {
			add("Subject", *m.Subject)
		}
	} else {
		add("SubscribeURL", m.SubscribeURL)
	}
	add("Timestamp", m.Timestamp)
	if m.Type != "Notification" {
		add("Token", m.Token)
	}
	add("TopicArn", m.TopicArn)
	add("Type", m.Type)
	return []byte(b.String())
}

// cert is the pinned certificate, else the one at certURL, fetched once.
func (v *Verifier) cert(ctx context.Context, certURL string) (*x509.Certificate, error) {
	if v.pinned != nil {
		return v.pinned, nil
	}
	u, err := url.Parse(certURL)
	if err != nil || u.Scheme != "https" || !snsHost.MatchString(u.Hostname()) || u.Port() != "" || !strings.HasSuffix(u.Path, ".pem") {
		return nil, errCertURL
	}
	v.mu.Lock()
	c, ok := v.certs[certURL]
	v.mu.Unlock()
	if ok {
		return c, nil
	}
	body, err := v.fetch(ctx, certURL)
	if err != nil {
		return nil, core.Unavailable("The SNS signing certificate could not be fetched; try again.")
	}
	if c, err = parseCert(body); err != nil {
		return nil, errSignature
	}
	v.mu.Lock()
	if len(v.certs) >= maxCerts {
		for k := range v.certs { // a rotation left the old ones: drop any
			delete(v.certs, k)
			break
		}
	}
	v.certs[certURL] = c
	v.mu.Unlock()
	return c, nil
}

// fetch GETs u, reading at most maxFetch bytes of a 200 answer.
func (v *Verifier) fetch(ctx context.Context, u string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %d", u, resp.StatusCode)
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxFetch))
}

// ErrSubscribeURL refuses a SubscribeURL that is not on an SNS host.
var ErrSubscribeURL = errors.New("the SubscribeURL is not an https URL on an sns.<region>.amazonaws.com host")

// Confirm confirms a subscription by fetching its SubscribeURL, only when
// that is an https URL on an sns.<region>.amazonaws.com host.
func (v *Verifier) Confirm(ctx context.Context, subscribeURL string) error {
	u, err := url.Parse(subscribeURL)
	if err != nil || u.Scheme != "https" || !snsHost.MatchString(u.Hostname()) || u.Port() != "" {
		return ErrSubscribeURL
	}
	_, err = v.fetch(ctx, subscribeURL)
	return err
}
