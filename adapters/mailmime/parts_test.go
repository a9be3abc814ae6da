package mailmime_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/callsign/callsign/adapters/mailmime"
	"github.com/callsign/callsign/core"
)

// manyParts is a message of n one-byte attachments.
func manyParts(n int) []byte {
	var b strings.Builder
	b.WriteString("From: a@example.org\r\nSubject: parts\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n")
	b.WriteString("--B\r\nContent-Type: text/plain\r\n\r\nhello\r\n")
	for i := range n {
		fmt.Fprintf(&b, "--B\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=f%d\r\n\r\nx\r\n", i)
	}
	b.WriteString("--B--\r\n")
	return []byte(b.String())
}

// A message past core.MaxMessageParts is refused as too large before its
// tree is built; one under it is read whole.
func TestPartLimit(t *testing.T) {
	p := mailmime.Parser{}
	got, err := p.Parse(manyParts(core.MaxMessageParts - 3))
	if err != nil || len(got.Attachments) != core.MaxMessageParts-3 {
		t.Fatalf("under the limit: %d attachments, %v", len(got.Attachments), err)
	}
	if _, err := p.Parse(manyParts(core.MaxMessageParts)); core.KindOf(err) != core.KindTooLarge {
		t.Fatalf("over the limit: %v", err)
	}
	// Nested parts count too.
	nested := strings.Replace(string(manyParts(300)), "--B--\r\n",
		"--B\r\nContent-Type: multipart/mixed; boundary=C\r\n\r\n"+strings.Repeat("--C\r\nContent-Type: text/plain\r\n\r\ny\r\n", 300)+"--C--\r\n--B--\r\n", 1)
	if _, err := p.Parse([]byte(nested)); core.KindOf(err) != core.KindTooLarge {
		t.Fatalf("nested parts past the limit: %v", err)
	}
}

// BenchmarkParseManyParts parses the audit's message of 100,000 one-byte
// attachments: the allocations per Parse (B/op) are what receiving it costs.
func BenchmarkParseManyParts(b *testing.B) {
	raw := manyParts(100_000)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for range b.N {
		mailmime.Parser{}.Parse(raw)
	}
}
