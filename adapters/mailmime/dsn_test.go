package mailmime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/callsign/callsign/core"
)

const dsnFixtures = "../../testdata/dsn"

func readDSNFixture(t *testing.T, name string) (core.DSN, bool) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dsnFixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return Parser{}.ReadDSN(raw)
}

// The bounce shapes of the common mail servers, built from their published
// formats: each names the recipient, what happened and why, and the
// returned message.
func TestReadDSN(t *testing.T) {
	cases := []struct {
		file, mta, recipient, status, diagnostic, messageID string
		action                                              core.DSNAction
		enhanced                                            string
	}{
		{"postfix.eml", "mx.example.net", "nobody@example.net", "5.1.1",
			"smtp; 550 5.1.1 <nobody@example.net>: Recipient address rejected: User unknown in virtual mailbox table",
			"original-1@agents.example", core.DSNFailed, "5.1.1"},
		{"postfix-delayed.eml", "mx.example.net", "slow@example.net", "4.4.1",
			"X-Postfix; connect to mail.example.net[192.0.2.10]:25: Connection timed out",
			"original-2@agents.example", core.DSNDelayed, "4.4.1"},
		{"exim.eml", "mail.example.org", "gone@example.org", "5.0.0",
			"smtp; 550 5.1.1 <gone@example.org>: Recipient address rejected: User unknown in local recipient table",
			"original-3@agents.example", core.DSNFailed, "5.1.1"},
		{"gmail.eml", "googlemail.com", "no-such-user@example.com", "5.1.1",
			"smtp; 550-5.1.1 The email account that you tried to reach does not exist.",
			"original-4@agents.example", core.DSNFailed, "5.1.1"},
		{"m365.eml", "AM0PR01MB1234.eurprd01.prod.exchangelabs.example", "ghost@contoso.example", "5.1.10",
			"smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient ghost@contoso.example not found by SMTP address lookup",
			"original-5@agents.example", core.DSNFailed, "5.1.10"},
	}
	for _, c := range cases {
		dsn, ok := readDSNFixture(t, c.file)
		if !ok || len(dsn.Recipients) != 1 {
			t.Errorf("%s: ok=%v, %+v", c.file, ok, dsn)
			continue
		}
		r := dsn.Recipients[0]
		if dsn.ReportingMTA != c.mta || r.Address() != c.recipient || r.Action != c.action || r.Status != c.status ||
			!strings.HasPrefix(r.Diagnostic, c.diagnostic) || dsn.OriginalMessageID != c.messageID {
			t.Errorf("%s: read %+v %+v", c.file, dsn, r)
		}
		if _, enhanced := r.Codes(); enhanced != c.enhanced {
			t.Errorf("%s: enhanced code %q, want %q", c.file, enhanced, c.enhanced)
		}
	}
}

func TestReadDSNWithSeveralRecipients(t *testing.T) {
	dsn, ok := readDSNFixture(t, "two-recipients.eml")
	if !ok || len(dsn.Recipients) != 2 {
		t.Fatalf("ok=%v, %+v", ok, dsn)
	}
	full, nobody := dsn.Recipients[0], dsn.Recipients[1]
	if full.Address() != "full@example.net" || full.Status != "5.2.2" || nobody.Address() != "NOBODY@example.net" || nobody.Status != "5.1.1" {
		t.Errorf("recipients: %+v", dsn.Recipients)
	}
	if dsn.OriginalMessageID != "" {
		t.Errorf("no returned message, yet a Message-ID: %q", dsn.OriginalMessageID)
	}
}

func TestReadDSNRefusesOtherMail(t *testing.T) {
	if _, ok := readDSNFixture(t, "autoreply.eml"); ok {
		t.Error("an auto-reply read as a report")
	}
	for name, raw := range map[string]string{
		"feedback report": "Content-Type: multipart/report; report-type=feedback-report; boundary=b\r\n\r\n--b\r\nContent-Type: message/feedback-report\r\n\r\nFeedback-Type: abuse\r\n--b--\r\n",
		"no recipients":   "Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; x\r\n--b--\r\n",
		"not MIME":        "Subject: hi\r\n\r\nbody\r\n",
		"garbage":         "\x00\x01\x02",
	} {
		if dsn, ok := (Parser{}).ReadDSN([]byte(raw)); ok {
			t.Errorf("%s: read as %+v", name, dsn)
		}
	}
}

// A report naming more recipients than anyone sends to is read up to the bound.
func TestReadDSNIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; x\r\n")
	for range MaxDSNRecipients + 50 {
		b.WriteString("\r\nFinal-Recipient: rfc822; a@example.net\r\nAction: failed\r\nStatus: 5.1.1\r\n")
	}
	b.WriteString("--b--\r\n")
	dsn, ok := Parser{}.ReadDSN([]byte(b.String()))
	if !ok || len(dsn.Recipients) != MaxDSNRecipients {
		t.Errorf("read %d recipients", len(dsn.Recipients))
	}
}
