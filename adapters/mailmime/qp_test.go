package mailmime

import (
	"bytes"
	"io"
	"math/rand/v2"
	"mime/quotedprintable"
	"strings"
	"testing"
)

// TestQuotedPrintableAsTheStandardLibrary: decodeQuotedPrintable gives what
// mime/quotedprintable's Reader gives, bytes and failure alike, for the
// fixtures' parts and for random bodies made of what the decoder treats
// specially: escapes good and bad, soft and hard line breaks, white space
// before them, control and 8-bit bytes, lines near bufio's 4 KiB.
func TestQuotedPrintableAsTheStandardLibrary(t *testing.T) {
	stdlib := func(body []byte) ([]byte, error) {
		return io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body)))
	}
	check := func(body []byte) {
		t.Helper()
		want, wantErr := stdlib(body)
		got, err := decodeQuotedPrintable(body)
		if (err != nil) != (wantErr != nil) || err == nil && !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %q, %v\nwant %q, %v", body, got, err, want, wantErr)
		}
	}
	for _, body := range []string{"", "=", "a=", "=\n", "a=\n", "a= \r\n", "a=\r\r\n", "a=\t", "=4", "=4\r\n", "=41=4g=\r\n", "x=\rb\n",
		"a \t\r\n\n\r\nb", "\x01", "\x7f\n", "caf=C3=A9 =e2=80=94 \n", "a\rb\n", strings.Repeat("x", 4095) + "\n", strings.Repeat("x", 4096) + "\n",
		strings.Repeat("x", 4095), strings.Repeat("x", 4096), strings.Repeat("x", 4094) + "=\n" + strings.Repeat("y", 5000)} {
		check([]byte(body))
	}
	for _, name := range []string{"smtpload.eml", "latin1-qp.eml", "alternative.eml"} {
		check(fixture(t, name))
	}
	alphabet := []byte("==AaFf09g \t\r\n\n\x01\x7f\x80\xc3x.")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		body := make([]byte, rng.IntN(40))
		for i := range body {
			body[i] = alphabet[rng.IntN(len(alphabet))]
		}
		check(body)
	}
	for range 200 {
		body := bytes.Repeat([]byte("ab"), 2040+rng.IntN(20))
		for range 3 {
			body[rng.IntN(len(body))] = alphabet[rng.IntN(len(alphabet))]
		}
		check(body)
	}
}
