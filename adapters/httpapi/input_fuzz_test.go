package httpapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/core"
)

// FuzzReadInput decodes whatever body and Content-Type the fuzzer makes, as
// every JSON, form and multipart route does, and reads fields from it: a
// bad body is a 4xx error (invalid, too large or unsupported), never a
// panic or another kind of error. The corpus is in
// testdata/fuzz/FuzzReadInput.
func FuzzReadInput(f *testing.F) {
	for _, seed := range []struct{ ct, body string }{
		{"application/json", `{"name": "x", "to": ["a@example.org", "b@example.org"], "is_read": true, "n": 1.5, "o": {"k": null}}`},
		{"application/json", `[1, 2]`},
		{"application/json; charset=utf-8", "{\"subject\": \"\\u0000\\ud800\"}"},
		{"", `{"name": "y"}`},
		{"application/x-www-form-urlencoded", "name=x&to=a%40example.org,b%40example.org&is_read=on&name=z"},
		{"application/x-www-form-urlencoded", "%zz=1&;;&a=%ff"},
		{"multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nx\r\n--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--b--\r\n"},
		{"multipart/form-data", "--b\r\n"},
		{"text/plain", "hello"},
		{"application/json; charset=\"", "{}"},
	} {
		f.Add(seed.ct, seed.body)
	}
	gin.SetMode(gin.TestMode)
	f.Fuzz(func(t *testing.T, contentType, body string) {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest(http.MethodPost, "/api/x/", strings.NewReader(body))
		if contentType != "" {
			c.Request.Header.Set("Content-Type", contentType)
		}
		in, err := readInputLimit(c, 64<<10, errTooLarge)
		if err != nil {
			var se *statusError
			if !errors.As(err, &se) && core.KindOf(err) != core.KindInvalid && !errors.Is(err, errTooLarge) {
				t.Fatalf("%q %q: error %T %v is not a client error", contentType, body, err, err)
			}
			return
		}
		for _, name := range []string{"name", "to", "is_read", "n", "o", "file", "subject"} {
			in.str(name)
			in.text(name)
			in.boolean(name)
			in.strList(name)
			in.uuid(name)
		}
		if err := in.err(); err != nil && core.KindOf(err) != core.KindInvalid {
			t.Fatalf("field problems of kind %v: %v", core.KindOf(err), err)
		}
	})
}
