package core

import (
	"html"
	"strings"
)

// htmlDoc is what the verification rule needs of an HTML body: its visible
// text and its links.
type htmlDoc struct {
	text  string
	links []htmlLink
}

// htmlLink is one <a href> of an HTML body.
type htmlLink struct {
	href  string // with character references decoded
	label string // the anchor's visible text, plus the alt text of its images
	start int    // where the anchor's text begins in htmlDoc.text
	end   int    // and where it ends
}

// maxLinkLabel bounds an anchor's label: a label is a button's words, and an
// anchor left open by broken markup must not copy the rest of the document.
const maxLinkLabel = 200

// blockTags end a line of text: each starts or ends a block, row or cell.
var blockTags = set("br", "p", "div", "tr", "td", "th", "li", "ul", "ol", "table", "tbody",
	"h1", "h2", "h3", "h4", "h5", "h6", "hr", "blockquote", "center", "section", "article",
	"header", "footer", "body", "button")

// rawTextTags hold no visible text (style sheets, scripts, the title).
var rawTextTags = set("style", "script", "title", "noscript", "template", "xml")

// readHTML reads an HTML body in one pass: text outside tags (with
// character references decoded, a newline for each block) and the first
// maxLinks anchors with their labels. It is not an HTML parser and need not be one: it never
// looks back, so broken markup costs nothing more than a wrong word or two.
// The standard library has no HTML tokenizer, and core imports nothing else.
func readHTML(s string) htmlDoc {
	var text strings.Builder
	// Room for all of it: the text of most mail's HTML is more than half
	// of it, and a builder that grew once had cost both sizes.
	text.Grow(len(s))
	var links []htmlLink
	open, alt := -1, ""
	closeLink := func() {
		if open >= 0 {
			links[open].label = linkLabel(text.String()[links[open].start:], alt)
			links[open].end = text.Len()
			open, alt = -1, ""
		}
	}
	for i := 0; i < len(s); {
		lt := strings.IndexByte(s[i:], '<')
		if lt < 0 {
			writeHTMLText(&text, s[i:])
			break
		}
		writeHTMLText(&text, s[i:i+lt])
		i += lt
		if strings.HasPrefix(s[i:], "<!--") {
			end := strings.Index(s[i+4:], "-->")
			if end < 0 {
				break
			}
			i += 4 + end + 3
			continue
		}
		t, ok := readTag(s, i)
		if !ok {
			text.WriteByte('<')
			i++
			continue
		}
		i = t.end
		switch {
		case t.name == "a":
			closeLink()
			if !t.closing && len(links) < maxLinks { // the rule weighs no more
				links = append(links, htmlLink{href: html.UnescapeString(t.attr("href")), start: text.Len()})
				open = len(links) - 1
			}
		case t.name == "img" && open >= 0 && len(alt) < maxLinkLabel:
			alt += " " + html.UnescapeString(t.attr("alt"))
		case rawTextTags[t.name] && !t.closing:
			i = skipRawText(s, i, t.name)
		case blockTags[t.name]:
			text.WriteByte('\n')
		}
	}
	closeLink()
	return htmlDoc{text: text.String(), links: links}
}

// writeHTMLText appends a run of text, decoding character references.
func writeHTMLText(b *strings.Builder, s string) {
	if strings.IndexByte(s, '&') >= 0 {
		s = html.UnescapeString(s)
	}
	b.WriteString(s)
}

// linkLabel is an anchor's text and image alt text on one line, bounded.
func linkLabel(text, alt string) string {
	label := strings.Join(strings.Fields(cutUTF8(text, 4*maxLinkLabel)+" "+alt), " ")
	return cutUTF8(label, maxLinkLabel)
}

// htmlTag is one start or end tag.
type htmlTag struct {
	name    string // lower case
	attrs   string // the raw text between the name and the closing ">"
	closing bool
	end     int // the index just past the tag
}

// readTag reads the tag that starts at s[i] == '<'. It reports false when
// the "<" starts no tag ("a < b"). A tag left open runs to the end of s.
func readTag(s string, i int) (htmlTag, bool) {
	j := i + 1
	t := htmlTag{}
	if j < len(s) && s[j] == '/' {
		t.closing = true
		j++
	}
	if j < len(s) && (s[j] == '!' || s[j] == '?') {
		// A declaration or processing instruction: <!DOCTYPE html>, <?xml …?>.
		end := strings.IndexByte(s[j:], '>')
		if end < 0 {
			return htmlTag{name: "!", end: len(s)}, true
		}
		return htmlTag{name: "!", end: j + end + 1}, true
	}
	nameStart := j
	for j < len(s) && isASCIILetterOrDigit(s[j]) {
		j++
	}
	if j == nameStart || !isASCIILetter(s[nameStart]) {
		return htmlTag{}, false
	}
	t.name = strings.ToLower(s[nameStart:j])
	attrStart := j
	for j < len(s) && s[j] != '>' {
		if q := s[j]; q == '"' || q == '\'' {
			k := strings.IndexByte(s[j+1:], q)
			if k < 0 {
				j = len(s)
				break
			}
			j += k + 1
		}
		j++
	}
	t.attrs = s[attrStart:min(j, len(s))]
	t.end = min(j+1, len(s))
	return t, true
}

// attr returns the value of the attribute name (lower case), or "".
func (t htmlTag) attr(name string) string {
	a := t.attrs
	for a != "" {
		a = strings.TrimLeft(a, " \t\r\n\f/")
		k := 0
		for k < len(a) && a[k] != '=' && a[k] != ' ' && a[k] != '\t' && a[k] != '\n' && a[k] != '\r' && a[k] != '/' {
			k++
		}
		key := a[:k]
		a = strings.TrimLeft(a[k:], " \t\r\n\f")
		value := ""
		if strings.HasPrefix(a, "=") {
			a = strings.TrimLeft(a[1:], " \t\r\n\f")
			if a != "" && (a[0] == '"' || a[0] == '\'') {
				q := a[0]
				end := strings.IndexByte(a[1:], q)
				if end < 0 {
					end = len(a) - 1
				}
				value, a = a[1:1+end], a[min(len(a), end+2):]
			} else {
				end := strings.IndexAny(a, " \t\r\n\f")
				if end < 0 {
					end = len(a)
				}
				value, a = a[:end], a[end:]
			}
		}
		if strings.EqualFold(key, name) {
			return value
		}
		if k == 0 && value == "" {
			a = a[min(1, len(a)):] // a stray character: step over it
		}
	}
	return ""
}

// skipRawText returns the index just past the end tag of the raw-text
// element name that starts at i, or len(s) if it never ends.
func skipRawText(s string, i int, name string) int {
	for {
		k := strings.Index(s[i:], "</")
		if k < 0 {
			return len(s)
		}
		i += k + 2
		if len(s)-i >= len(name) && strings.EqualFold(s[i:i+len(name)], name) {
			if end := strings.IndexByte(s[i:], '>'); end >= 0 {
				return i + end + 1
			}
			return len(s)
		}
	}
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isASCIILetterOrDigit(c byte) bool { return isASCIILetter(c) || c >= '0' && c <= '9' }
