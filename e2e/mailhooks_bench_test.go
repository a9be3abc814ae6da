package e2e

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
)

// BenchmarkIngestProviders measures mail arriving through the providers'
// webhooks (a Mailgun route's mime post, an SES receipt through SNS,
// each signed and checked) next to SMTP ingest, in the same run: 4 KiB
// messages, each a new one, 16 at once, on each database. The posts are
// signed before the clock starts, so the figures are the service's.
func BenchmarkIngestProviders(b *testing.B) {
	body := strings.Repeat("A line of a statement, as banks send them, long enough to wrap.\r\n", 64)
	message := func(i int) string {
		return fmt.Sprintf("From: Bank <alerts@bank.example>\r\nTo: agent@agents.test\r\nSubject: Statement %d\r\n"+
			"Message-ID: <statement-%d-%d@bank.example>\r\nDate: Mon, 23 Nov 2026 08:00:00 +0000\r\nMIME-Version: 1.0\r\n"+
			"Content-Type: text/plain; charset=utf-8\r\n\r\n%s", i, i, time.Now().UnixNano(), body)
	}
	sns := newTestSNS(b)
	for _, d := range sqlstoretest.Dialects() {
		for _, door := range []string{"smtp", "mailgun", "ses"} {
			b.Run(fmt.Sprintf("%s/%s/c=16", d, door), func(b *testing.B) {
				r := start(b, d, map[string]string{"CALLSIGN_MAILGUN_WEBHOOK_SIGNING_KEY": testMailgunKey,
					"CALLSIGN_SNS_TOPIC_ARNS": testTopic, "CALLSIGN_SNS_CERT_FILE": sns.certFile})
				mgmt := r.bootstrap("bench@example.com")
				var ident struct{ Inbox string }
				r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "agent"}, &ident)
				if door == "smtp" {
					messages := make([][]byte, 64)
					for i := range messages {
						messages[i] = []byte(message(i))
					}
					ingest(b, r.svc.SMTPAddr(), ident.Inbox, messages, 16)
					return
				}
				posts := make([][]byte, b.N)
				path, contentType := "/webhooks/mailgun/mime", "application/x-www-form-urlencoded"
				for i := range posts {
					if door == "mailgun" {
						form := url.Values{"recipient": {ident.Inbox}, "sender": {"alerts@bank.example"}, "body-mime": {message(i)}}
						posts[i] = []byte(mailgunSigned(form, fmt.Sprint("token-", i), time.Now()).Encode())
						continue
					}
					path, contentType = "/webhooks/ses/", "text/plain; charset=UTF-8"
					posts[i] = sns.notification(b, testTopic, fmt.Sprint("n-", i), map[string]any{"notificationType": "Received",
						"mail":    map[string]any{"source": "alerts@bank.example"},
						"receipt": map[string]any{"recipients": []any{ident.Inbox}, "action": map[string]any{"type": "SNS", "encoding": "BASE64"}},
						"content": base64.StdEncoding.EncodeToString([]byte(message(i)))})
				}
				var next atomic.Int64
				runConcurrent(b, 16, func() error {
					if code := r.post(path, contentType, posts[next.Add(1)-1]); code != 200 {
						return fmt.Errorf("%s answered %d", path, code)
					}
					return nil
				})
			})
		}
	}
}
