package mailmime

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/jhillyerd/enmime/v2"
)

// enmime's boundary reader copies every byte one at a time through every
// enclosing multipart level. That was two thirds of the cost of parsing a
// plain multipart/alternative message, and it makes deep nesting quadratic
// (50,000 levels in 2.5 MB took 8 s and 544 MB). So cutParts splits
// well-formed multipart mail at its boundaries itself and gives enmime only
// the leaves; whatever it does not expect goes to enmime whole, within
// slowPathBudget.

// maxDepth is the deepest multipart nesting cutParts follows.
const maxDepth = 32

// slowPathBudget bounds enmime's own multipart reader, whose work grows with
// the message size times the nesting depth: messages whose size times their
// number of multipart headers exceeds it are not given to it (about 2 s of
// CPU at the budget) and keep their body as plain text instead.
const slowPathBudget = 64 << 20

var errTooComplex = errors.New("multipart structure too large for the forgiving reader")

// sizes, when not nil, takes the place of the decoded bytes of the parts
// that are not text (Parser.Describe): cutParts records each one's size
// here and leaves its Content nil.
type sizes map[*enmime.Part]int

// readParts builds enmime's part tree for raw.
func readParts(raw []byte, sized sizes) (*enmime.Part, error) {
	if root, ok := cutParts(raw, "0", 0, sized); ok {
		return root, nil
	}
	if n := countMultipart(raw); n > 0 && n*len(raw) > slowPathBudget {
		return nil, fmt.Errorf("%w (%d multipart headers in %d bytes)", errTooComplex, n, len(raw))
	}
	return parser.ReadParts(bytes.NewReader(raw))
}

// cutParts reads entity, a message or a part, the way enmime would. It
// reports false for anything it does not expect: a single-part message (which
// enmime reads quickly anyway), no delimiter, a leaf without a readable
// Content-Type (enmime treats it differently in a part than in a message), a
// header enmime cannot read, nesting beyond maxDepth.
func cutParts(entity []byte, id string, depth int, sized sizes) (*enmime.Part, bool) {
	head, body := cutHeader(entity)
	if !containsFold(head, "multipart/") {
		return leaf(entity, id, depth, sized)
	}
	if depth > maxDepth {
		return nil, false
	}
	p, err := readPart(bytes.NewReader(head))
	if err != nil {
		return nil, false
	}
	if p.Boundary == "" || !strings.HasPrefix(p.ContentType, "multipart/") {
		return leaf(entity, id, depth, sized)
	}
	parts, closed := cutMultipart(body, p.Boundary)
	if parts == nil {
		return nil, false
	}
	if !closed { // as enmime reports it
		p.Errors = append(p.Errors, &enmime.Error{
			Name:   enmime.ErrorMissingBoundary,
			Detail: fmt.Sprintf("Boundary %q was not closed correctly", p.Boundary),
		})
	}
	var last *enmime.Part
	for i, part := range parts {
		childID := strconv.Itoa(i + 1)
		if depth > 0 {
			childID = id + "." + childID
		}
		child, ok := cutParts(part, childID, depth+1, sized)
		if !ok {
			return nil, false
		}
		child.Parent = p
		if last == nil {
			p.FirstChild = child
		} else {
			last.NextSibling = child
		}
		last = child
	}
	p.PartID = id
	if depth > 0 {
		p.PartID += ".0"
	}
	return p, true
}

// leaf has enmime read a part that is not multipart.
func leaf(entity []byte, id string, depth int, sized sizes) (*enmime.Part, bool) {
	if depth == 0 {
		return nil, false
	}
	d := predecode(entity, sized == nil)
	p, err := readPart(bytes.NewReader(d.head))
	if err == nil && d.text && strings.EqualFold(p.Charset, "utf-8") {
		// enmime would only copy UTF-8 text (twice, in buffers grown as it
		// reads): it is given the header alone and the text set here.
		p.Content = d.content
	} else if err == nil && d.text { // enmime converts other charsets
		p, err = readPart(io.MultiReader(bytes.NewReader(d.head), bytes.NewReader(d.content)))
	}
	if err != nil || p.Header.Get("Content-Type") == "" || p.ContentType == "" || p.Boundary != "" {
		return nil, false
	}
	if d.size >= 0 {
		p.Content = d.content
		if sized != nil {
			sized[p] = d.size
		}
	}
	p.PartID = id
	return p, true
}

// readers are bufio.Readers for enmime and the quoted-printable decoder,
// which take a *bufio.Reader as it is instead of making one of 4 KiB per
// part.
var readers = sync.Pool{New: func() any { return bufio.NewReader(nil) }}

// readPart has enmime read one part (or a multipart's header) from r.
func readPart(r io.Reader) (*enmime.Part, error) {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() { br.Reset(nil); readers.Put(br) }()
	return parser.ReadParts(br)
}

// predecode decodes a part's transfer encoding before enmime reads it:
// quoted-printable text parts and base64 parts. enmime's decoders, built to
// repair broken input, read one byte at a time and were a third of the cost
// of parsing ordinary mail; the standard library's decoders refuse what is
// broken, and such a part goes to enmime unchanged to be repaired. A decoded
// part says 8bit (text) or binary, which enmime passes through, and goes to
// enmime as its header alone: enmime would only copy the content, into
// buffers grown as it reads (for a large attachment that held three times
// its size at once).
func predecode(entity []byte, keep bool) decodedPart {
	whole := decodedPart{head: entity, size: -1}
	head, body := cutHeader(entity)
	if body == nil {
		return whole
	}
	cteStart, cteEnd, cteValue := headerField(head, "content-transfer-encoding")
	if cteStart < 0 {
		return whole
	}
	_, _, ctype := headerField(head, "content-type")
	isText := bytes.HasPrefix(bytes.ToLower(bytes.TrimSpace(ctype)), []byte("text/"))
	cte := strings.ToLower(string(bytes.TrimSpace(cteValue)))
	d := decodedPart{text: isText, size: -1}
	var err error
	switch {
	case cte == "quoted-printable" && isText:
		d.content, err = decodeQuotedPrintable(body)
	case cte == "base64":
		d.content, d.size, err = decodeBase64(body, keep || isText)
	default:
		return whole
	}
	if err != nil {
		return whole
	}
	newCTE := "Content-Transfer-Encoding: binary\r\n"
	if isText {
		newCTE = "Content-Transfer-Encoding: 8bit\r\n"
		d.size = -1
	}
	d.head = append(append(append(make([]byte, 0, len(head)+len(newCTE)), head[:cteStart]...), newCTE...), head[cteEnd:]...)
	return d
}

// decodedPart is a part as predecode leaves it: head is what enmime reads,
// the whole part when it was not decoded (size -1, content nil), else the
// header alone, saying 8bit (text) or binary, and content its decoded
// body (with keep false, nil for a part that is not text, whose size is
// size).
type decodedPart struct {
	head    []byte
	content []byte
	size    int
	text    bool
}

// decodeBase64 decodes a base64 body strictly, ignoring the white space
// between its lines, into out of n bytes; with keep false it only checks
// and counts them, and out is nil. The decoder skips line breaks itself; only a body
// with spaces or tabs is first copied without them.
func decodeBase64(body []byte, keep bool) (out []byte, n int, err error) {
	if bytes.ContainsAny(body, " \t") {
		compact := make([]byte, 0, len(body))
		for _, c := range body {
			if c != '\r' && c != '\n' && c != ' ' && c != '\t' {
				compact = append(compact, c)
			}
		}
		body = compact
	}
	if !keep {
		counted, err := io.Copy(io.Discard, base64.NewDecoder(base64.StdEncoding, bytes.NewReader(body)))
		return nil, int(counted), err
	}
	out = make([]byte, base64.StdEncoding.DecodedLen(len(body)))
	n, err = base64.StdEncoding.Decode(out, body)
	return out[:n], n, err
}

// headerField finds a field of head by name, ignoring case: where its lines
// start and end (folded lines included) and its value; start is -1 when
// head has no such field.
func headerField(head []byte, name string) (start, end int, value []byte) {
	for i := 0; i < len(head); {
		lineEnd := bytes.IndexByte(head[i:], '\n')
		if lineEnd < 0 {
			lineEnd = len(head) - i - 1
		}
		next := i + lineEnd + 1
		line := head[i:next]
		colon := bytes.IndexByte(line, ':')
		if colon > 0 && bytes.EqualFold(bytes.TrimSpace(line[:colon]), []byte(name)) {
			end := next
			for end < len(head) && (head[end] == ' ' || head[end] == '\t') {
				n := bytes.IndexByte(head[end:], '\n')
				if n < 0 {
					end = len(head)
					break
				}
				end += n + 1
			}
			return i, end, head[i+colon+1 : end]
		}
		i = next
	}
	return -1, -1, nil
}

// cutHeader splits entity after the blank line that ends its header.
func cutHeader(entity []byte) (head, body []byte) {
	for i := 0; i < len(entity); {
		n := bytes.IndexByte(entity[i:], '\n')
		if n < 0 {
			break
		}
		if n == 0 || n == 1 && entity[i] == '\r' {
			return entity[:i+n+1], entity[i+n+1:]
		}
		i += n + 1
	}
	return entity, nil
}

// cutMultipart splits a multipart body into its parts as enmime's boundary
// reader does: a delimiter is "--boundary" at the start of a line followed by
// white space, the closing one "--boundary--"; the line break before a
// delimiter belongs to it; preamble and epilogue are dropped. Without a
// closing delimiter the last part runs to the end. parts is nil when there is
// no delimiter at all.
func cutMultipart(body []byte, boundary string) (parts [][]byte, closed bool) {
	delim := []byte("--" + boundary)
	start := -1 // where the current part began, once a delimiter was seen
	for pos := 0; ; {
		i := bytes.Index(body[pos:], delim)
		if i < 0 {
			break
		}
		i += pos
		pos = i + len(delim)
		rest := body[pos:]
		closing := bytes.HasPrefix(rest, []byte("--"))
		if i > 0 && body[i-1] != '\n' || !closing && (len(rest) == 0 || !unicode.IsSpace(rune(rest[0]))) {
			continue // not at a line start, or a longer boundary
		}
		if start >= 0 {
			parts = append(parts, body[start:trimBreak(body, start, i)])
		}
		if closing {
			return parts, true
		}
		eol := bytes.IndexByte(rest, '\n')
		if eol < 0 {
			start = len(body)
			break
		}
		start = pos + eol + 1
		pos = start
	}
	if start < 0 {
		return nil, false
	}
	return append(parts, body[start:]), false
}

// trimBreak is end without the line break that ends body[start:end].
func trimBreak(body []byte, start, end int) int {
	if end > start && body[end-1] == '\n' {
		end--
		if end > start && body[end-1] == '\r' {
			end--
		}
	}
	return end
}

// containsFold reports whether s holds the lower-case ASCII word, in any case.
func containsFold(s []byte, word string) bool {
	return indexFold(s, word) >= 0
}

// countMultipart counts "multipart/" in raw, in any case.
func countMultipart(raw []byte) int {
	n := 0
	for i := indexFold(raw, "multipart/"); i >= 0; i = indexFold(raw, "multipart/") {
		n++
		raw = raw[i+len("multipart/"):]
	}
	return n
}

// indexFold finds the lower-case ASCII word ending in '/' in s, in any case,
// by looking for the slash first (rare outside base64).
func indexFold(s []byte, word string) int {
	for off := 0; ; {
		i := bytes.IndexByte(s[off:], '/')
		if i < 0 {
			return -1
		}
		end := off + i + 1
		if start := end - len(word); start >= 0 && bytes.EqualFold(s[start:end], []byte(word)) {
			return start
		}
		off = end
	}
}
