package mailmime

import (
	"encoding/base64"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/jhillyerd/enmime/v2"
)

// RFC 2231 parameters (name*=charset'lang'%XX…, and names cut into numbered
// pieces name*0, name*1*…) are decoded here, before enmime and Go's
// mime.ParseMediaType see them: Go decodes only UTF-8 and US-ASCII and drops
// the parameter otherwise (a Windows-1252 file name became
// "attachment-1.pdf", a boundary in "ansi-x3.4-1968" lost the whole body),
// and enmime kept only one piece of a continued name. Each decoded value is
// put back as a plain quoted parameter in UTF-8.

// maxParamPieces bounds the continuations joined into one value.
const maxParamPieces = 100

// decodeExtendedParams rewrites the RFC 2231 parameters of a Content-Type
// or Content-Disposition value; a value without any is returned as it is.
func decodeExtendedParams(value string) string {
	if !strings.Contains(value, "*") {
		return value
	}
	fields := splitParams(value)
	type piece struct {
		n        int
		extended bool
		text     string
	}
	pieces := map[string][]piece{}
	var order []string // names in their first appearance, to keep the value's order
	var kept []string
	for i, f := range fields {
		name, val, ok := strings.Cut(f, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if i == 0 || !ok || !strings.Contains(name, "*") {
			kept = append(kept, f)
			continue
		}
		base, section, _ := strings.Cut(name, "*")
		p := piece{extended: strings.HasSuffix(name, "*"), text: unquote(strings.TrimSpace(val))}
		if num := strings.TrimSuffix(section, "*"); num != "" {
			n, err := strconv.Atoi(num)
			if err != nil || n < 0 || n >= maxParamPieces {
				continue // not a parameter RFC 2231 knows: dropped
			}
			p.n = n
		}
		if _, seen := pieces[base]; !seen {
			order = append(order, base)
		}
		pieces[base] = append(pieces[base], p)
	}
	for _, base := range order {
		ps := pieces[base]
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].n < ps[j].n })
		var raw strings.Builder
		charset := ""
		for i, p := range ps {
			text := p.text
			if p.extended {
				if i == 0 {
					// charset'language'value; only the first piece names them.
					if cs, rest, ok := strings.Cut(text, "'"); ok {
						if _, v, ok := strings.Cut(rest, "'"); ok {
							charset, text = cs, v
						}
					}
				}
				if unescaped, err := url.PathUnescape(text); err == nil {
					text = unescaped
				}
			}
			raw.WriteString(text)
		}
		kept = append(kept, base+"="+quote(toUTF8(charset, raw.String())))
	}
	return strings.Join(kept, "; ")
}

// toUTF8 decodes s from charset with the decoders of the body parser.
func toUTF8(charset, s string) string {
	switch strings.ToLower(charset) {
	case "", "utf-8", "utf8", "us-ascii":
		return lenientUTF8(s)
	}
	word := "=?" + charset + "?B?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
	if decoded := enmime.DecodeRFC2047(word); decoded != word {
		return decoded
	}
	return lenientUTF8(s) // a charset nobody knows
}

// splitParams cuts a header value at the semicolons outside quotes.
func splitParams(v string) []string {
	var out []string
	quoted, escaped, start := false, false, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case escaped:
			escaped = false
		case c == '\\' && quoted:
			escaped = true
		case c == '"':
			quoted = !quoted
		case c == ';' && !quoted:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	out = append(out, v[start:])
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

func unquote(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
		return strings.NewReplacer(`\\`, `\`, `\"`, `"`).Replace(v)
	}
	return v
}

func quote(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", "").Replace(v) + `"`
}
