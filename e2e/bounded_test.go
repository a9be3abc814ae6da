package e2e

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/core"
)

// bigMail is a plain-text message of about size bytes, as anyone may send
// over SMTP.
func bigMail(to, msgID string, size int) string {
	line := strings.Repeat("All work and no play makes a dull message. ", 10) + "\r\n"
	return "From: bulk@example.org\r\nTo: " + to + "\r\nSubject: Big " + msgID + "\r\nMessage-ID: <" + msgID + "@example.org>\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + strings.Repeat(line, size/len(line)+1)
}

// TestListsCarryPreviewsNotBodies: the message list and a thread's detail
// answer metadata and a preview whatever the messages hold; one message
// answers its text body cut to core.MaxStoredBody with truncated set, and
// raw/ the whole source.
func TestListsCarryPreviewsNotBodies(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("big@example.com")
		var ident struct{ UUID, Inbox string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Bulk"}, &ident)
		const size = 3 << 20
		smtpAddr := r.svc.SMTPAddr()
		for i := range 3 {
			sendSMTP(t, smtpAddr, "bulk@example.org", []string{ident.Inbox}, bigMail(ident.Inbox, fmt.Sprint("big-", i), size))
		}
		status, body := r.callRaw("GET", "/api/email-messages/?identity="+ident.UUID, mgmt, nil)
		if status != 200 || len(body) > 16<<10 {
			t.Fatalf("list: %d, %d bytes", status, len(body))
		}
		var pg struct {
			Count   int
			Results []map[string]any
		}
		r.call("GET", "/api/email-messages/?identity="+ident.UUID, mgmt, nil, &pg)
		if pg.Count != 3 {
			t.Fatalf("count %d", pg.Count)
		}
		first := pg.Results[0]
		if _, has := first["content"]; has || first["html"] != nil {
			t.Errorf("a list item carries bodies: %v", first)
		}
		if p, _ := first["preview"].(string); !strings.HasPrefix(p, "All work and no play") || len(p) > core.PreviewLength {
			t.Errorf("preview %q", p)
		}
		if first["truncated"] != true {
			t.Errorf("a 3 MiB text is stored whole? truncated=%v", first["truncated"])
		}
		status, body = r.callRaw("GET", fmt.Sprintf("/api/email-inbox/%s/", first["thread_id"]), mgmt, nil)
		if status != 200 || len(body) > 16<<10 || strings.Contains(string(body), `"content"`) {
			t.Fatalf("thread detail: %d, %d bytes", status, len(body))
		}
		var m struct {
			Content   string
			Truncated bool
		}
		r.call("GET", fmt.Sprintf("/api/email-messages/%v/", first["id"]), mgmt, nil, &m)
		if len(m.Content) != core.MaxStoredBody || !m.Truncated || !strings.HasPrefix(m.Content, "All work") {
			t.Errorf("one message: %d bytes of content, truncated %v", len(m.Content), m.Truncated)
		}
		status, body = r.callRaw("GET", fmt.Sprintf("/api/email-messages/%v/raw/", first["id"]), mgmt, nil)
		if status != 200 || len(body) < size {
			t.Errorf("raw: %d, %d bytes", status, len(body))
		}
	})
}

// BenchmarkListBigMessages measures one GET /api/email-messages/ over four
// 20 MB text messages received over SMTP: the bytes it answers and the
// heap it allocates (alloc-B/op), and the heap in use after it.
func BenchmarkListBigMessages(b *testing.B) {
	r := start(b, sqlstore.SQLite, map[string]string{"CALLSIGN_SMTP_MAX_BYTES": fmt.Sprint(25 << 20)})
	mgmt := r.bootstrap("bench@example.com")
	var ident struct{ UUID, Inbox string }
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Bulk"}, &ident)
	for i := range 4 {
		sendSMTP(b, r.svc.SMTPAddr(), "bulk@example.org", []string{ident.Inbox}, bigMail(ident.Inbox, fmt.Sprint("big-", i), 20<<20))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var answered int
	b.ResetTimer()
	for range b.N {
		status, body := r.callRaw("GET", "/api/email-messages/?identity="+ident.UUID, mgmt, nil)
		if status != 200 {
			b.Fatalf("list: %d", status)
		}
		answered = len(body)
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(answered), "resp-B")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N), "alloc-B/op")
	b.ReportMetric(float64(after.HeapInuse)-float64(before.HeapInuse), "heap-growth-B")
}
