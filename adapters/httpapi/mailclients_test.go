package httpapi

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Sending as mail clients expect it: recipients with names, the identity's
// name on From, a reply to a UTF-8 Message-ID, and a forward that keeps the
// original's inline images inline.
func TestSendingForMailClients(t *testing.T) {
	h := newHarness(t)
	h.runOutbox()
	tn := newTenants(t, h)
	unfold := strings.NewReplacer("\r\n ", " ", "\r\n\t", " ")

	sent := h.do("POST", "/api/email-messages/compose/", map[string]any{
		"to_email": "Ann Example <ann@example.org>", "cc": []any{`"Lee, Bo" <bo@example.org>`}, "bcc": "Dee <dee@example.org>",
		"subject": "Names", "content": "hi"}, tn.keyOne).want(t, 201).object(t)
	if sent["to_email"] != "ann@example.org" || fmt.Sprint(sent["cc"]) != "[bo@example.org]" || fmt.Sprint(sent["bcc"]) != "[dee@example.org]" {
		t.Fatalf("sent %v", sent)
	}
	h.waitFor(tn.keyOne, sent["id"])
	raw := unfold.Replace(string(h.relay.Sent()[0].Raw))
	for _, want := range []string{"\r\nTo: \"Ann Example\" <ann@example.org>\r\n", "\r\nCc: \"Lee, Bo\" <bo@example.org>\r\n", "\r\nFrom: \"one\" <one@agents.test>\r\n"} {
		if !strings.Contains("\r\n"+raw, want) {
			t.Errorf("the message lacks %q:\n%s", want, raw)
		}
	}
	if strings.Contains(raw, "dee@example.org") {
		t.Errorf("the Bcc shows:\n%s", raw)
	}
	h.do("POST", "/api/email-messages/compose/", map[string]any{"to_email": []any{"Ann <ann@example.org"}, "content": "x"}, tn.keyOne).want(t, 400)

	// A Message-ID in UTF-8, as SMTPUTF8 allows: the reply names it.
	h.receive("one@agents.test", mailFrom("Zoë Example <zoe@example.org>", "café@example.org", "Grüße", "Hallo."))
	incoming := h.do("GET", "/api/email-messages/?direction=incoming", nil, tn.keyOne).want(t, 200).object(t)["results"].([]any)[0].(map[string]any)
	reply := h.do("POST", fmt.Sprintf("/api/email-messages/%v/reply/", incoming["id"]), map[string]any{"content": "Danke."}, tn.keyOne).want(t, 201).object(t)
	if reply["in_reply_to"] != "café@example.org" {
		t.Fatalf("reply %v", reply)
	}
	h.waitFor(tn.keyOne, reply["id"])
	raw = unfold.Replace(string(h.relay.Sent()[1].Raw))
	if !strings.Contains(raw, "\r\nIn-Reply-To: <café@example.org>\r\n") || !strings.Contains(raw, "\r\nTo: =?utf-8?q?Zo=C3=AB?= Example <zoe@example.org>\r\n") {
		t.Errorf("the reply's header:\n%s", raw)
	}

	// HTML with an image it shows inline (cid:), forwarded.
	h.receive("one@agents.test", "From: ann@example.org\r\nTo: one@agents.test\r\nSubject: Logo\r\nMessage-ID: <logo@example.org>\r\n"+
		"Content-Type: multipart/related; boundary=r\r\n\r\n--r\r\nContent-Type: text/html\r\n\r\n<p>Our logo: <img src=\"cid:img1@example.org\"></p>\r\n"+
		"--r\r\nContent-Type: image/png\r\nContent-ID: <img1@example.org>\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n--r--\r\n")
	logo := h.do("GET", "/api/email-messages/?direction=incoming", nil, tn.keyOne).want(t, 200).object(t)["results"].([]any)[1].(map[string]any)
	fwd := h.do("POST", fmt.Sprintf("/api/email-messages/%v/forward/", logo["id"]), map[string]any{"to_email": "frank@example.org", "content": "FYI"}, tn.keyOne).want(t, 201).object(t)
	h.waitFor(tn.keyOne, fwd["id"])
	raw = string(h.relay.Sent()[2].Raw)
	related, image := strings.Index(raw, "Content-Type: multipart/related;"), strings.Index(raw, "Content-Id: <img1@example.org>")
	if related < 0 || image < related || !strings.Contains(raw, "cid:img1@example.org") || !strings.Contains(raw, "Content-Disposition: inline") {
		t.Errorf("the forward lost its inline image:\n%s", raw)
	}
	// An image the HTML shows though its disposition says attachment (as
	// some clients send it), in Apple Mail's shape: forwarded, it sits
	// with the HTML alone in multipart/related, inline.
	h.receive("one@agents.test", "From: ann@example.org\r\nTo: one@agents.test\r\nSubject: Chart\r\nMessage-ID: <chart@example.org>\r\n"+
		"Content-Type: multipart/alternative; boundary=a\r\n\r\n--a\r\nContent-Type: text/plain\r\n\r\nchart\r\n"+
		"--a\r\nContent-Type: multipart/related; boundary=r\r\n\r\n--r\r\nContent-Type: text/html\r\n\r\n<img src=\"cid:chart1@example.org\">\r\n"+
		"--r\r\nContent-Type: image/png; name=chart.png\r\nContent-Disposition: attachment; filename=chart.png\r\nContent-ID: <chart1@example.org>\r\n"+
		"Content-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n--r--\r\n--a--\r\n")
	chart := h.do("GET", "/api/email-messages/?direction=incoming&q=Chart", nil, tn.keyOne).want(t, 200).object(t)["results"].([]any)[0].(map[string]any)
	fwdChart := h.do("POST", fmt.Sprintf("/api/email-messages/%v/forward/", chart["id"]), map[string]any{"to_email": "frank@example.org", "content": "FYI"}, tn.keyOne).want(t, 201).object(t)
	h.waitFor(tn.keyOne, fwdChart["id"])
	raw = string(h.relay.Sent()[3].Raw)
	alternative, related, image := strings.Index(raw, "Content-Type: multipart/alternative;"), strings.Index(raw, "Content-Type: multipart/related;"), strings.Index(raw, "Content-Id: <chart1@example.org>")
	if alternative < 0 || related < alternative || image < related || strings.Contains(raw, "multipart/mixed") || strings.Contains(raw, "Content-Disposition: attachment") {
		t.Errorf("the forwarded chart is not inline beside the HTML:\n%s", raw)
	}
	// The stored forward's attachment records match its source.
	a := fwd["attachments"].([]any)[0].(map[string]any)
	file := h.do("GET", fmt.Sprintf("/api/attachments/%v/", a["uuid"]), nil, tn.keyOne).want(t, 200)
	if string(file.Body) != "\x89PNG\r\n\x1a\n" {
		t.Errorf("the forwarded image downloads as %q", string(file.Body))
	}
}

// A relay that refuses our credentials (or a TLS failure) keeps the mail
// queued, retried, with the reason in delivery_error and a loud log line.
func TestRelayRefusingOurCredentials(t *testing.T) {
	h := newHarness(t)
	refused := core.Unauthorized("relay smtp.example.net:587 rejected AUTH PLAIN as agent: 535 5.7.8 bad credentials")
	h.relay.Outcome = func(string) ports.RelayOutcome { return ports.RelayOutcome{Err: refused} }
	h.runOutbox()
	tn := newTenants(t, h)
	sent := h.do("POST", "/api/email-messages/compose/", map[string]any{"to_email": "ann@example.org", "content": "hi"}, tn.keyOne).want(t, 201).object(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		m := h.do("GET", fmt.Sprintf("/api/email-messages/%v/", sent["id"]), nil, tn.keyOne).want(t, 200).object(t)
		if m["delivery_error"] != nil {
			if m["delivery_status"] != "queued" || !strings.Contains(m["delivery_error"].(string), "535 5.7.8") {
				t.Fatalf("message %v", m)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no delivery_error while queued: %v", m)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if logs := h.logs.String(); !strings.Contains(logs, `"level":"ERROR","msg":"outbox: the relay or mail provider refused our credentials`) {
		t.Fatalf("no loud log line:\n%s", logs)
	}
}
