package e2e

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/callsign/callsign/adapters/sqlstore"
)

const (
	testMailgunKey = "key-mailgun-webhook-signing"
	testTopic      = "arn:aws:sns:eu-west-1:123456789012:callsign-mail"
)

// testSNS signs SNS messages as Amazon does, with a certificate the
// service is pinned to (CALLSIGN_SNS_CERT_FILE).
type testSNS struct {
	key      *rsa.PrivateKey
	certFile string
}

func newTestSNS(t testing.TB) *testSNS {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(9), Subject: pkix.Name{CommonName: "sns.amazonaws.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	s := &testSNS{key: key, certFile: filepath.Join(t.TempDir(), "sns.pem")}
	if err := os.WriteFile(s.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// notification is an SNS Notification of message on topic, signed with
// signature version 1 (SHA1withRSA) over the canonical string.
func (s *testSNS) notification(t testing.TB, topic, id string, message any) []byte {
	msg, _ := json.Marshal(message)
	n := map[string]string{"Type": "Notification", "MessageId": id, "TopicArn": topic, "Message": string(msg),
		"Timestamp": time.Now().UTC().Format(time.RFC3339), "SignatureVersion": "1",
		"SigningCertURL": "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-test.pem"}
	var canon strings.Builder
	for _, k := range []string{"Message", "MessageId", "Timestamp", "TopicArn", "Type"} {
		canon.WriteString(k + "\n" + n[k] + "\n")
	}
	sum := sha1.Sum([]byte(canon.String()))
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.key, crypto.SHA1, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	n["Signature"] = base64.StdEncoding.EncodeToString(sig)
	b, _ := json.Marshal(n)
	return b
}

// mailgunSigned adds Mailgun's signature fields, made at when.
func mailgunSigned(form url.Values, token string, when time.Time) url.Values {
	ts := strconv.FormatInt(when.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(testMailgunKey))
	mac.Write([]byte(ts + token))
	form.Set("timestamp", ts)
	form.Set("token", token)
	form.Set("signature", hex.EncodeToString(mac.Sum(nil)))
	return form
}

func (r *running) post(path, contentType string, body []byte) int {
	r.t.Helper()
	res, err := r.client.Post(r.baseURL+path, contentType, strings.NewReader(string(body)))
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	io.Copy(io.Discard, res.Body)
	return res.StatusCode
}

// Mail received by Mailgun and SES reaches the inbox over their signed
// webhooks, once however often it is posted, and a provider's bounce
// report bounces and suppresses a recipient of mail we sent.
func TestMailProviderWebhooks(t *testing.T) {
	t.Parallel()
	sns := newTestSNS(t)
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		relay := newTestRelay(t)
		relay.listen(t, "127.0.0.1:0")
		r := start(t, d, map[string]string{"CALLSIGN_MAILGUN_WEBHOOK_SIGNING_KEY": testMailgunKey, "CALLSIGN_SNS_TOPIC_ARNS": testTopic,
			"CALLSIGN_SNS_CERT_FILE": sns.certFile, "CALLSIGN_SMTP_RELAY": "smtp://relayuser:relaypass@" + relay.addr, "CALLSIGN_SMTP_RELAY_CA": relay.caFile})
		mgmt := r.bootstrap("owner@example.com")
		var agent struct{ UUID string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "agent"}, &agent)
		key := identityKey(r, mgmt, agent.UUID)
		// count is how many messages the agent received, and the one with subject.
		count := func(subject string) (int, map[string]any) {
			var page struct {
				Count   int
				Results []map[string]any
			}
			r.call("GET", "/api/email-messages/?direction=incoming", key, nil, &page)
			for _, m := range page.Results {
				if m["subject"] == subject {
					return page.Count, m
				}
			}
			return page.Count, nil
		}

		// Mailgun: a route's mime post; again with a new token (a retry);
		// a replayed token, a stale and a forged signature.
		raw := "From: Ann <ann@example.org>\r\nTo: agent@agents.test\r\nMessage-ID: <mg-1@example.org>\r\nSubject: Via Mailgun\r\n" +
			"X-Mailgun-Spf: Pass\r\n\r\nHello through Mailgun.\r\n"
		form := func() url.Values {
			return url.Values{"recipient": {"agent@agents.test"}, "sender": {"ann@example.org"}, "body-mime": {raw}}
		}
		formType := "application/x-www-form-urlencoded"
		now := time.Now()
		if got := r.post("/webhooks/mailgun/mime", formType, []byte(mailgunSigned(form(), "tok-1", now).Encode())); got != 200 {
			t.Fatalf("mime post: %d", got)
		}
		for name, c := range map[string]struct {
			form url.Values
			want int
		}{
			"retry":  {mailgunSigned(form(), "tok-2", now), 200},
			"replay": {mailgunSigned(form(), "tok-1", now), 200},
			"stale":  {mailgunSigned(form(), "tok-3", now.Add(-6*time.Minute)), 403},
			"forged": {func() url.Values {
				f := mailgunSigned(form(), "tok-4", now)
				f.Set("recipient", "other@agents.test")
				f.Set("signature", "00")
				return f
			}(), 403},
		} {
			if got := r.post("/webhooks/mailgun/mime", formType, []byte(c.form.Encode())); got != c.want {
				t.Errorf("%s: %d, want %d", name, got, c.want)
			}
		}
		n, m := count("Via Mailgun")
		if n != 1 || m == nil || m["authentication"].(map[string]any)["checked_by"] != "mailgun" {
			t.Fatalf("after the Mailgun posts: %d %v", n, m)
		}

		// SES: a receipt rule's SNS action, posted twice (SNS retried);
		// another topic is refused.
		sesRaw := "From: bob@example.net\r\nTo: agent@agents.test\r\nMessage-ID: <ses-1@example.net>\r\nSubject: Via SES\r\n\r\nHello through SES.\r\n"
		received := map[string]any{"notificationType": "Received", "mail": map[string]any{"source": "bob@example.net"}, "content": base64.StdEncoding.EncodeToString([]byte(sesRaw)),
			"receipt": map[string]any{"recipients": []any{"agent@agents.test"}, "spfVerdict": map[string]any{"status": "PASS"}, "dkimVerdict": map[string]any{"status": "PASS"},
				"dmarcVerdict": map[string]any{"status": "PASS"}, "action": map[string]any{"type": "SNS", "encoding": "BASE64"}}}
		for i, topic := range []string{testTopic, testTopic, "arn:aws:sns:eu-west-1:999999999999:theirs"} {
			want := map[bool]int{true: 200, false: 403}[topic == testTopic]
			if got := r.post("/webhooks/ses/", "text/plain; charset=UTF-8", sns.notification(t, topic, fmt.Sprint("n", i), received)); got != want {
				t.Fatalf("SES post %d: %d, want %d", i, got, want)
			}
		}
		if n, m = count("Via SES"); m == nil {
			t.Fatalf("SES mail not stored (%d messages)", n)
		}
		if auth := m["authentication"].(map[string]any); n != 2 || auth["checked_by"] != "ses" || auth["verdict"] != "pass" {
			t.Fatalf("after the SES posts: %d %v", n, m)
		}
		// Mail clients see both as mail like any other.
		c, err := imapclient.DialInsecure(r.svc.IMAPAddr(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Login("agent@agents.test", key).Wait(); err != nil {
			t.Fatal(err)
		}
		if sel, err := c.Select("INBOX", nil).Wait(); err != nil || sel.NumMessages != 2 {
			t.Fatalf("IMAP SELECT after the Mailgun and SES posts: %v %+v", err, sel)
		}

		// A message we sent, then SES's Permanent bounce of it.
		var sent struct {
			ID        int64
			MessageID string `json:"message_id"`
		}
		r.call("POST", "/api/email-messages/compose/", key, map[string]any{"to_email": "gone@example.org", "subject": "Hi", "content": "hello"}, &sent)
		var got struct {
			DeliveryStatus string `json:"delivery_status"`
			Recipients     []struct{ Email, Status string }
		}
		for deadline := time.Now().Add(10 * time.Second); got.DeliveryStatus != "sent" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			r.call("GET", fmt.Sprintf("/api/email-messages/%d/", sent.ID), key, nil, &got)
		}
		bounce := map[string]any{"notificationType": "Bounce", "mail": map[string]any{"commonHeaders": map[string]any{"messageId": "<" + sent.MessageID + ">"}},
			"bounce": map[string]any{"bounceType": "Permanent", "bouncedRecipients": []any{map[string]any{"emailAddress": "gone@example.org", "status": "5.1.1",
				"diagnosticCode": "smtp; 550 5.1.1 user unknown"}}}}
		if code := r.post("/webhooks/ses/", "text/plain; charset=UTF-8", sns.notification(t, testTopic, "b1", bounce)); code != http.StatusOK {
			t.Fatalf("bounce: %d", code)
		}
		r.call("GET", fmt.Sprintf("/api/email-messages/%d/", sent.ID), key, nil, &got)
		var sup []struct{ Email, Reason string }
		r.call("GET", "/api/suppressions/", key, nil, &sup)
		if len(got.Recipients) != 1 || got.Recipients[0].Status != "bounced" || got.DeliveryStatus != "bounced" || len(sup) != 1 || sup[0].Email != "gone@example.org" {
			t.Fatalf("after the bounce: %+v, suppressions %+v", got, sup)
		}
	})
}
