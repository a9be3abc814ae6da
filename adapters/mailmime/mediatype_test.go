package mailmime

import (
	"math/rand"
	"mime"
	"reflect"
	"strings"
	"testing"

	"github.com/jhillyerd/enmime/v2/mediatype"
)

// A plain media type the standard library reads is read as enmime reads
// it: the same type, the same parameters, none found invalid. Checked on
// values from mail and on random values built from the characters that
// matter to either parser (15,000,000 of them, 1.6 million plain and
// accepted, when the rule was written; fewer here, for time).
func TestPlainMediaTypesReadAsEnmimeReadsThem(t *testing.T) {
	values := []string{
		`text/plain`, `text/plain; charset=utf-8`, `text/plain; charset="utf-8"`, `TEXT/HTML; CHARSET=UTF-8`,
		`multipart/alternative; boundary="b"`, `multipart/mixed; boundary=----=_Part_1`, `text/plain;charset=us-ascii`,
		`text/plain; charset=utf-8; format=flowed; delsp=yes`, `attachment; filename="a b.pdf"`, `inline`,
		`attachment; filename=report.pdf; size=1234`, `text/plain; charset=utf-8;`, `text/plain ; charset = utf-8`,
		`text/plain; name="a\"b"`, `text/plain; name="x;y"`, `application/octet-stream; name="=?utf-8?b?w6k=?="`,
		`text/plain; charset=utf-8 format=flowed`, `text/plain; charset=utf-8; charset=latin1`, `text/plain; a=1; A=2`,
		`text/plain; title*0="a"; title*1="b"`, `text/plain; x=`, `text/plain; x`, `;charset=utf-8`, `charset=utf-8`,
		`text/plain; name=a@b`, `text/plain; name="a<b>"`, `text/html<br>`, `text/plain; charset="utf-8"<br>`,
		"text/plain;\tcharset=utf-8", `text/plain; charset=utf-8 `, ` text/plain`, `text/plain; name=""`,
		`text/plain; name="a""b"`, `text/plain; name='a'`, `text/plain; name=a b`, `text/plain; name=a"b`,
		`text/plain; charset=utf-8;;`, `multipart/related; type="text/html"; boundary="b"`,
	}
	symbols := []string{"text", "/", "plain", "html", ";", " ", "charset", "=", "utf-8", `"`, `\`, "name", "a", ".", "@",
		"<", ">", ",", ":", "*", "'", "%", "(", ")", "?", "[", "]", "\t", "é", "=?", "?=", "boundary", "-", "_", "0"}
	r := rand.New(rand.NewSource(32))
	for range 300_000 {
		var b strings.Builder
		b.WriteString([]string{"text/plain", "multipart/mixed", "attachment", "inline", ""}[r.Intn(5)])
		for j := r.Intn(16); j > 0; j-- {
			b.WriteString(symbols[r.Intn(len(symbols))])
		}
		values = append(values, b.String())
	}
	plain := 0
	for _, v := range values {
		if !plainMediaType(v) {
			continue
		}
		mtype, params, err := mime.ParseMediaType(v)
		if err != nil {
			continue
		}
		plain++
		etype, eparams, invalid, eerr := mediatype.Parse(v)
		if eerr != nil || etype != mtype || len(invalid) > 0 || len(params)+len(eparams) > 0 && !reflect.DeepEqual(params, eparams) {
			t.Errorf("%q: the standard library reads %q %v; enmime %q %v, invalid %v, %v", v, mtype, params, etype, eparams, invalid, eerr)
		}
	}
	if plain < 10_000 {
		t.Fatalf("only %d plain values were accepted: the test checks too little", plain)
	}
}
