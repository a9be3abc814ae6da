package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// TestWhereAMessageWent follows mail and text messages in and out and asks
// the logs what happened to each and the metrics how busy it was. No body,
// subject or secret may reach a log line.
func TestWhereAMessageWent(t *testing.T) {
	t.Parallel()
	relay := newTestRelay(t)
	relay.listen(t, "127.0.0.1:0")
	r := start(t, sqlstore.SQLite, map[string]string{
		"CALLSIGN_SMTP_RELAY":    "smtp://relayuser:relaypass@" + relay.addr,
		"CALLSIGN_SMTP_RELAY_CA": relay.caFile,
		"CALLSIGN_METRICS_ADDR":  "127.0.0.1:0",
		"CALLSIGN_LOG_LEVEL":     "info",
	}, fastRetry)
	mgmt := r.bootstrap("ops@example.com")
	var ident struct{ UUID, Inbox, Phone string }
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Ops"}, &ident)
	var key struct{ Key string }
	r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID}, &key)

	// Mail in, over SMTP.
	raw := "From: Alice <alice@example.org>\r\nTo: " + ident.Inbox + "\r\nSubject: SUBJECT-in-7f3a\r\n" +
		"Message-ID: <trace-1@example.org>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\nBODY-in-7f3a\r\n"
	sendSMTP(t, r.svc.SMTPAddr(), "alice@example.org", []string{ident.Inbox}, raw)
	var page apiPage
	r.call("GET", "/api/email-messages/", key.Key, nil, &page)
	if page.Count != 1 {
		t.Fatalf("inbound: %+v", page)
	}
	in := page.Results[0]

	// Mail out, through the relay.
	var sent apiMessage
	if s := r.call("POST", "/api/email-messages/compose/", key.Key, map[string]any{"to_email": "bob@example.org",
		"subject": "SUBJECT-out-7f3a", "content": "BODY-out-7f3a"}, &sent); s != 201 {
		t.Fatalf("compose: %d", s)
	}
	poll(t, "the message at the relay", func() bool { return len(relay.received()) == 1 })
	poll(t, "the attempt's log line", func() bool { return strings.Contains(r.logs(), `msg="mail delivery attempt"`) })

	// Texts out and in, through the simulator.
	r.call("POST", "/api/identities/"+ident.UUID+"/provision-phone/", mgmt, nil, &ident)
	if s := r.call("POST", "/api/messages/send/", key.Key, map[string]any{"to": "+14155550100", "body": "SMS-out-7f3a"}, nil); s != 201 {
		t.Fatalf("send sms: %d", s)
	}
	form := url.Values{"From": {"+14155550100"}, "To": {ident.Phone}, "Body": {"SMS-in-7f3a"}}
	req, _ := http.NewRequest("POST", r.baseURL+"/webhooks/sim/sms/", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+mgmt)
	res, err := r.client.Do(req)
	if err != nil || res.StatusCode != 201 {
		t.Fatalf("inbound sms: %v %v", err, res)
	}
	res.Body.Close()

	// The logs: one line for each, with ids and outcome.
	logs := r.logs()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`msg="mail accepted" result=accepted envelope_from=alice@example.org bytes=\d+ duration_ms=[\d.]+ message_id=trace-1@example.org verdict=none spf=none dkim=none dmarc=none messages=\[` + fmt.Sprint(in.ID) + `\] inboxes=\[` + regexp.QuoteMeta(ident.Inbox) + `\] identities=\[` + ident.UUID + `\]`),
		regexp.MustCompile(`msg="mail delivery attempt" message=` + fmt.Sprint(sent.ID) + ` attempt=1 outcome=sent recipients=1 duration_ms=[\d.]+`),
		regexp.MustCompile(`msg="sms outgoing" message=\d+ outcome=sent identity=` + ident.UUID + ` from=\` + ident.Phone + ` to=\+14155550100 provider_sid=\S+ duration_ms=`),
		regexp.MustCompile(`msg="sms incoming" message=\d+ outcome=received identity=` + ident.UUID + ` from=\+14155550100 to=\` + ident.Phone + ` provider_sid=\S+`),
	} {
		if len(want.FindAllString(logs, -1)) != 1 {
			t.Errorf("no single log line matches %s:\n%s", want, logs)
		}
	}
	for _, secret := range []string{"SUBJECT-in", "BODY-in", "SUBJECT-out", "BODY-out", "SMS-out", "SMS-in", "relaypass", mgmt, key.Key,
		strings.TrimPrefix(mgmt, "svc_mgmt_")} {
		if strings.Contains(logs, secret) {
			t.Errorf("%q reached the log:\n%s", secret, logs)
		}
	}

	// The metrics, scraped as Prometheus would.
	res, err = http.Get("http://" + r.svc.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scraped, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		`callsign_inbound_messages_total{result="accepted"} 1`,
		`callsign_mail_ingest_duration_seconds_count 1`,
		`callsign_outbound_attempts_total{outcome="sent"} 1`,
		`callsign_outbound_attempt_duration_seconds_count 1`,
		`callsign_outbox_queued_messages 0`,
		`callsign_sms_messages_total{direction="outgoing",outcome="sent"} 1`,
		`callsign_sms_messages_total{direction="incoming",outcome="received"} 1`,
		`callsign_http_requests_total{method="POST",route="/api/identities/",status="201"} 1`,
		`callsign_http_request_duration_seconds_count{method="POST",route="/api/identities/"} 1`,
		`callsign_smtp_sessions_total 1`, // one message, one session
		`callsign_smtp_open_sessions 0`,
		`callsign_mail_commit_batch_messages_count`,
		`go_sql_open_connections{db_name="write"}`,
		`go_goroutines`,
		`process_resident_memory_bytes`,
	} {
		if !strings.Contains(string(scraped), want) {
			t.Errorf("the metrics lack %s:\n%s", want, scraped)
		}
	}
	problems, err := testutil.GatherAndLint(r.svc.Metrics().Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("metric %s: %s", p.Metric, p.Text)
	}
}
