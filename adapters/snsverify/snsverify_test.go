package snsverify

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/core"
)

const topic = "arn:aws:sns:eu-west-1:123456789012:callsign-mail"

type signer struct {
	key     *rsa.PrivateKey
	certPEM []byte
}

func newSigner(t *testing.T) signer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sns.amazonaws.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return signer{key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// sign fills m's signature as SNS does and returns the posted body.
func (s signer) sign(t *testing.T, m message) []byte {
	t.Helper()
	hash := crypto.SHA256
	if m.SignatureVersion == "1" {
		hash = crypto.SHA1
	}
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.key, hash, digest(hash, canonical(m)))
	if err != nil {
		t.Fatal(err)
	}
	m.Signature = base64.StdEncoding.EncodeToString(sig)
	b, _ := json.Marshal(m)
	return b
}

func notification(version string) message {
	subject := "Amazon SES Email Receipt Notification"
	return message{Type: "Notification", MessageId: "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324", TopicArn: topic, Subject: &subject,
		Message: `{"notificationType":"Received"}`, Timestamp: "2026-12-06T10:00:00.000Z", SignatureVersion: version,
		SigningCertURL: "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-abc.pem"}
}

func TestVerifyPinned(t *testing.T) {
	s := newSigner(t)
	v, err := New(Options{TopicARNs: []string{topic}, CertPEM: s.certPEM})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, version := range []string{"1", "2"} {
		if err := v.Verify(ctx, s.sign(t, notification(version))); err != nil {
			t.Errorf("version %s: %v", version, err)
		}
	}
	noSubject := notification("2")
	noSubject.Subject = nil
	if err := v.Verify(ctx, s.sign(t, noSubject)); err != nil {
		t.Errorf("without a subject: %v", err)
	}
	confirm := message{Type: "SubscriptionConfirmation", MessageId: "m", Token: "tok", TopicArn: topic, Message: "confirm",
		SubscribeURL: "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription", Timestamp: "2026-12-06T10:00:00.000Z", SignatureVersion: "1"}
	if err := v.Verify(ctx, s.sign(t, confirm)); err != nil {
		t.Errorf("subscription confirmation: %v", err)
	}

	// Forged: the message changed after signing; signed by another key;
	// an unknown version; another topic (signed, but not ours).
	var forged message
	_ = json.Unmarshal(s.sign(t, notification("2")), &forged)
	forged.Message = `{"notificationType":"Bounce"}`
	body, _ := json.Marshal(forged)
	other := newSigner(t)
	wrongTopic := notification("2")
	wrongTopic.TopicArn = "arn:aws:sns:eu-west-1:999999999999:theirs"
	badVersion := notification("3")
	for name, body := range map[string][]byte{"altered": body, "other key": other.sign(t, notification("2")),
		"wrong topic": s.sign(t, wrongTopic), "version 3": s.sign(t, badVersion), "not json": []byte("{"), "unsigned": []byte(`{"Type":"Notification"}`)} {
		if err := v.Verify(ctx, body); core.KindOf(err) != core.KindForbidden {
			t.Errorf("%s: %v, want Forbidden", name, err)
		}
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestCertificateFetchedFromSNSHostsOnlyAndCached(t *testing.T) {
	s := newSigner(t)
	var fetched []string
	client := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		fetched = append(fetched, r.URL.String())
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(string(s.certPEM))), Header: http.Header{}}, nil
	})}
	v, err := New(Options{TopicARNs: []string{topic}, Client: client})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if err := v.Verify(ctx, s.sign(t, notification("2"))); err != nil {
			t.Fatal(err)
		}
	}
	if len(fetched) != 1 || fetched[0] != notification("2").SigningCertURL {
		t.Fatalf("fetched %v, want the certificate once", fetched)
	}
	for _, u := range []string{"https://evil.example/SimpleNotificationService-abc.pem", "http://sns.eu-west-1.amazonaws.com/x.pem",
		"https://sns.eu-west-1.amazonaws.com.evil.example/x.pem", "https://sns.eu-west-1.amazonaws.com:8443/x.pem", "https://sns.eu-west-1.amazonaws.com/x.txt"} {
		m := notification("2")
		m.SigningCertURL = u
		if err := v.Verify(ctx, s.sign(t, m)); core.KindOf(err) != core.KindForbidden {
			t.Errorf("%s: %v, want Forbidden", u, err)
		}
	}
	if len(fetched) != 1 {
		t.Fatalf("fetched %v", fetched)
	}

	if err := v.Confirm(ctx, "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=t"); err != nil || len(fetched) != 2 {
		t.Fatalf("confirm: %v, fetched %v", err, fetched)
	}
	for _, u := range []string{"https://127.0.0.1/?Action=ConfirmSubscription", "http://sns.eu-west-1.amazonaws.com/", "https://attacker.example/sns.eu-west-1.amazonaws.com/"} {
		if err := v.Confirm(ctx, u); err != ErrSubscribeURL {
			t.Errorf("%s: %v, want refused", u, err)
		}
	}
	if len(fetched) != 2 {
		t.Fatalf("refused URLs were fetched: %v", fetched)
	}
}
