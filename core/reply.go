package core

import (
	"html"
	"strings"
	"unicode"
)

// Reply is the new content of a received message: its bodies without the
// quoted history and without a clearly marked signature (ExtractReply).
type Reply struct {
	Text string
	HTML string
}

// ExtractReply finds the new content of a message from its text and HTML
// bodies, each on its own. A body with nothing to cut is returned as it
// is, and a body with no new text at all (a bare forward, a quote alone) is
// returned whole: the result is never empty when the body has text.
//
// Both bodies become lines, each sorted as talon (mailgun/talon,
// quotations.py) sorts them: blank, quoted (">" or, in HTML, inside a
// quote element), an attribution, the start of the history, a forward, a
// signature, or new text. The decision is then the same for both:
//
//   - The history starts, and runs to the end, at "-----Original
//     Message-----" (and its German, French, Spanish, Portuguese and
//     Japanese forms), at a header block (a From: line followed by two of
//     Sent:/Date:, To:, Subject: in English, German, French, Spanish,
//     Portuguese or Japanese, as Outlook writes it, after its "____" line
//     if any), and in HTML at Outlook's marked elements (the border-top
//     splitter div, divRplyFwdMsg, appendonsend, OLK_SRC_BODY_SECTION).
//     Talon's rule: text after such a splitter is history even unquoted.
//   - An attribution ("On … wrote:", "Le … a écrit :", "Am … schrieb …:",
//     "El … escribió:", "Em … escreveu:", "…のメッセージ:", "…のメール:",
//     "…さんは書きました:", "2025年2月3日(月) 10:15 Name <address>:") may
//     be wrapped over up to three lines (email_reply_parser joins them
//     too); it belongs to the quote that follows it. Followed by unquoted
//     text it starts the history if it holds a date (a digit), else it is
//     new text.
//   - Quote elements in HTML: any blockquote (Apple Mail's and
//     Thunderbird's type="cite", K-9's and Gmail's class gmail_quote),
//     Gmail's attribution (div.gmail_attr), Yahoo's div.yahoo_quoted and
//     Thunderbird's div.moz-cite-prefix. Not Gmail's div.gmail_quote: an
//     inline reply writes its answers inside it, between the blockquotes. In text, ">" lines, which (talon's rule) count
//     only when an attribution or splitter is present or there are three.
//   - A forward line ("---------- Forwarded message ---------", "Begin
//     forwarded message:" …) before any quote keeps the message whole: the
//     forwarded text is the content (talon).
//   - A signature is a "-- " line and what follows it up to the next
//     quote (email_reply_parser), a client's line such as "Sent from my
//     iPhone", "Von meinem iPhone gesendet", "Get Outlook for iOS" when no
//     new text follows it, and in HTML Thunderbird's moz-signature, Gmail's
//     gmail_signature and Outlook mobile's signature element.
//
// New content is then: for a top-posted reply, the new text above the
// history; for a bottom-posted one (quote first, new text after, no quote
// between), the text after the quote; for an interleaved reply (new text
// between quotes) everything up to the last new line, the quotes kept,
// since answers such as "Yes" mean nothing without their questions.
// Talon gives an interleaved reply back whole; we drop its tail. In every
// case the new content ends with the last new line: signatures and
// quotes after it go.
//
// HTML is cut at line boundaries in the markup (the block tag that starts
// a line), elements left open are closed, and a cut start reopens the
// elements it is inside, so the result stays well formed. The standard
// library has no HTML tokenizer and core imports nothing else; the cut
// needs only tag boundaries and the open elements (readTag).
func ExtractReply(text, htmlBody string) Reply {
	return Reply{Text: extractText(text), HTML: extractHTML(htmlBody)}
}

// replyLine is one line of a body as the rule sees it.
type replyLine struct {
	text string
	// In HTML: the line's text is inside a quote element, a signature
	// element, or after an element that starts the history.
	quoted, signature, history bool
}

type lineKind uint8

const (
	blankLine lineKind = iota
	newLine
	quotedLine
	attributionLine
	historyLine
	forwardLine
	signatureLine
	signatureMark   // "-- ": what follows up to the next quote is the signature
	signatureCloser // "Sent from my iPhone": a signature when nothing new follows
)

// keptLines is the range [from, to) of lines holding the new content;
// cut says whether anything outside it has text.
func keptLines(lines []replyLine) (from, to int, cut bool) {
	kinds := sortLines(lines)
	history := len(lines)
	for _, k := range kinds {
		if k == forwardLine {
			return 0, len(lines), false // a forward: the forwarded text is the content
		}
		if k == historyLine || k == quotedLine || k == attributionLine {
			break
		}
	}
	for i, k := range kinds {
		if k == historyLine {
			history = i
			break
		}
	}
	// An attribution belongs to the quote that follows it; followed by
	// unquoted text, it starts the history if it is dated.
	for i := 0; i < history; i++ {
		if kinds[i] != attributionLine {
			continue
		}
		j := i
		for j < history && (kinds[j] == attributionLine || kinds[j] == blankLine) {
			j++
		}
		if j == history || kinds[j] == quotedLine {
			i = j
			continue
		}
		if strings.ContainsFunc(lines[i].text, unicode.IsDigit) {
			history = i
			break
		}
		for ; i < j; i++ {
			if kinds[i] == attributionLine {
				kinds[i] = newLine
			}
		}
	}
	firstQuote, lastNew := -1, -1
	for i := 0; i < history; i++ {
		switch kinds[i] {
		case quotedLine, attributionLine:
			if firstQuote < 0 {
				firstQuote = i
			}
		case newLine:
			lastNew = i
		}
	}
	if lastNew < 0 {
		return 0, len(lines), false
	}
	to = lastNew + 1
	if firstQuote >= 0 && firstQuote < lastNew {
		firstAfter, newBefore, quoteBetween := -1, false, false
		for i := 0; i <= lastNew; i++ {
			switch {
			case kinds[i] == newLine && i < firstQuote:
				newBefore = true
			case kinds[i] == newLine && firstAfter < 0 && i > firstQuote:
				firstAfter = i
			case firstAfter >= 0 && (kinds[i] == quotedLine || kinds[i] == attributionLine):
				quoteBetween = true
			}
		}
		if !newBefore && !quoteBetween { // bottom-posted
			from = firstAfter
		}
	}
	for i := to; i < len(lines) && !cut; i++ {
		cut = kinds[i] != blankLine
	}
	return from, to, cut || from > 0
}

// sortLines gives each line its kind.
func sortLines(lines []replyLine) []lineKind {
	kinds := make([]lineKind, len(lines))
	splitters, markers := 0, 0
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		s := strings.TrimFunc(l.text, unicode.IsSpace)
		switch {
		case s == "":
			kinds[i] = blankLine
		case l.quoted:
			kinds[i] = quotedLine
			splitters++ // a quote element is as sure as an attribution
		case s[0] == '>':
			kinds[i] = quotedLine
			markers++
		case l.history || originalMessageLine(s):
			kinds[i] = historyLine
			splitters++
		case l.signature:
			kinds[i] = signatureLine
		case forwardingLine(s):
			kinds[i] = forwardLine
		case s == "--":
			kinds[i] = signatureMark
		case signatureCloserLine(s):
			kinds[i] = signatureCloser
		case headerBlock(lines, i):
			kinds[i] = historyLine
			splitters++
			if j := previousText(lines, i); j >= 0 && strings.Trim(strings.TrimSpace(lines[j].text), "_") == "" &&
				len(strings.TrimSpace(lines[j].text)) >= 10 {
				kinds[j] = historyLine // Outlook's "________" line above the block
			}
		default:
			if n := attribution(lines, i); n > 0 {
				for j := i; j < i+n; j++ {
					if strings.TrimFunc(lines[j].text, unicode.IsSpace) != "" {
						kinds[j] = attributionLine
					}
				}
				splitters++
				i += n - 1
				continue
			}
			kinds[i] = newLine
		}
	}
	for i := 0; i < len(kinds); i++ {
		switch kinds[i] {
		case quotedLine:
			if splitters == 0 && markers < 3 && !lines[i].quoted {
				kinds[i] = newLine // a ">" or two in new text, not a quote
			}
		case signatureMark:
			kinds[i] = signatureLine
			for i+1 < len(kinds) && kinds[i+1] != quotedLine && kinds[i+1] != attributionLine && kinds[i+1] != historyLine {
				i++
				kinds[i] = signatureLine
			}
		case signatureCloser:
			kinds[i] = signatureLine
			if j := nextText(kinds, i); j >= 0 && (kinds[j] == newLine || kinds[j] == signatureCloser) {
				kinds[i] = newLine
			}
		}
	}
	return kinds
}

func previousText(lines []replyLine, i int) int {
	for i--; i >= 0; i-- {
		if strings.TrimSpace(lines[i].text) != "" {
			return i
		}
	}
	return -1
}

func nextText(kinds []lineKind, i int) int {
	for i++; i < len(kinds); i++ {
		if kinds[i] != blankLine {
			return i
		}
	}
	return -1
}

// maxAttributionLines is how many lines an attribution may be wrapped over.
const maxAttributionLines = 3

// attribution reports how many lines, from lines[i], an attribution
// spans ("On Mon, Feb 3, 2025 at 10:15 Anna <anna@example.com> wrote:"
// wrapped as a client wraps it), or 0 when none starts there.
func attribution(lines []replyLine, i int) int {
	var joined strings.Builder
	for n := 1; n <= maxAttributionLines && i+n <= len(lines); n++ {
		l := lines[i+n-1]
		s := strings.TrimFunc(l.text, unicode.IsSpace)
		if s == "" || s[0] == '>' || l.quoted || joined.Len()+len(s) > 400 {
			return 0
		}
		if n > 1 {
			joined.WriteByte(' ')
		}
		joined.WriteString(s)
		if attributionText(joined.String()) {
			for k := i + 1; k < i+n; k++ {
				if attribution(lines, k) > 0 {
					return 0 // it starts on a later line ("Best," "Bob" "On … wrote:")
				}
			}
			return n
		}
		if strings.HasSuffix(s, ":") || strings.HasSuffix(s, "：") {
			return 0 // a line that ends as a field does; the next is not its tail
		}
	}
	return 0
}

// attributionOpeners start "On <date>, <name> wrote:" in several languages.
var attributionOpeners = []string{"on ", "le ", "am ", "el ", "em ", "op ", "il ", "den ", "på ", "w dniu "}

// attributionVerbs end an attribution (before its colon).
var attributionVerbs = []string{"wrote", "a écrit", "schrieb", "escribió", "escreveu", "ha scritto", "schreef",
	"skrev", "napisał", "のメッセージ", "のメール", "書きました", "書き込みました"}

// attributionText reports whether s, one attribution on one line, names
// who wrote what follows.
func attributionText(s string) bool {
	if !strings.HasSuffix(s, ":") && !strings.HasSuffix(s, "：") {
		return false
	}
	low := strings.ToLower(s)
	body := strings.TrimRight(low, " :：\u00a0-")
	opened := false
	for _, o := range attributionOpeners {
		opened = opened || strings.HasPrefix(low, o)
	}
	dated := strings.ContainsFunc(s, unicode.IsDigit)
	for _, v := range attributionVerbs {
		if strings.HasSuffix(body, v) {
			return opened || dated || strings.Contains(s, "@")
		}
	}
	// German and Dutch put the verb before the name: "Am … schrieb Anna:".
	if (strings.HasPrefix(low, "am ") && strings.Contains(low, " schrieb ")) ||
		(strings.HasPrefix(low, "op ") && strings.Contains(low, " schreef ")) {
		return true
	}
	// A date and an address, as Gmail writes it in Japanese, Chinese and
	// Korean: "2025年2月3日(月) 10:15 Taro <taro@example.jp>:".
	return strings.HasSuffix(body, ">") && strings.Contains(s, "@") && hasClock(s)
}

// hasClock reports whether s holds a time of day ("10:15").
func hasClock(s string) bool {
	for i := 1; i+2 < len(s); i++ {
		if s[i] == ':' && isDigit(s[i-1]) && isDigit(s[i+1]) && isDigit(s[i+2]) {
			return true
		}
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// originalMessages are the separators above a quoted message, between dashes.
var originalMessages = set("original message", "reply message", "ursprüngliche nachricht", "originalnachricht",
	"original-nachricht", "message d'origine", "message d’origine", "mensaje original", "mensagem original",
	"元のメッセージ", "オリジナル メッセージ")

func originalMessageLine(s string) bool {
	return s[0] == '-' && originalMessages[strings.ToLower(strings.Trim(s, "- "))]
}

// forwardMarkers start a forwarded message, between dashes or on a line
// of their own.
var forwardMarkers = set("forwarded message", "weitergeleitete nachricht", "message transféré", "mensaje reenviado",
	"mensagem encaminhada", "mensaje original reenviado", "転送メッセージ")

var forwardOpeners = []string{"begin forwarded message", "anfang der weitergeleiteten nachricht",
	"début du message réexpédié", "début du message transféré", "inicio del mensaje reenviado",
	"início da mensagem reencaminhada", "início da mensagem encaminhada", "転送されたメッセージ"}

func forwardingLine(s string) bool {
	low := strings.ToLower(s)
	if s[0] == '-' && forwardMarkers[strings.Trim(low, "- ")] {
		return true
	}
	for _, o := range forwardOpeners {
		if strings.HasPrefix(low, o) {
			return true
		}
	}
	return false
}

// signatureClosers start the line a mail app adds under what is written on it.
var signatureClosers = []string{"sent from my ", "sent from mail for windows", "sent from outlook", "sent from yahoo mail",
	"sent with proton mail", "get outlook for ", "von meinem ", "gesendet von meinem ", "gesendet von outlook",
	"envoyé de mon ", "envoyé depuis mon ", "envoyé à partir de outlook", "enviado desde mi ", "enviado desde outlook",
	"enviado do meu ", "enviado de meu ", "enviado do outlook", "obtener outlook para ", "obtenha o outlook para ", "obter o outlook para ",
	"télécharger outlook pour ", "outlook für ios beziehen", "outlook für android beziehen"}

func signatureCloserLine(s string) bool {
	if len(s) > 120 {
		return false
	}
	low := strings.ToLower(withoutLinks(s))
	for _, c := range signatureClosers {
		if strings.HasPrefix(low, c) {
			return true
		}
	}
	// Japanese: "iPhoneから送信", "Outlook for iOS を入手".
	return strings.HasSuffix(low, "から送信") || strings.HasSuffix(low, "を入手") && strings.Contains(low, "outlook")
}

// withoutLinks drops the "<https://…>" a text body puts after a link's words.
func withoutLinks(s string) string {
	for {
		i := strings.Index(s, "<http")
		if i < 0 {
			return s
		}
		j := strings.IndexByte(s[i:], '>')
		if j < 0 {
			return s[:i]
		}
		s = s[:i] + s[i+j+1:]
	}
}

// headerRoles are the fields of a quoted message's header block, by role,
// in the languages Outlook writes them.
var headerRoles = map[string]byte{
	"from": 'f', "von": 'f', "de": 'f', "da": 'f', "van": 'f', "差出人": 'f', "送信者": 'f',
	"sent": 'd', "date": 'd', "gesendet": 'd', "datum": 'd', "envoyé": 'd', "enviado": 'd', "enviada": 'd',
	"enviado el": 'd', "fecha": 'd', "data": 'd', "送信日時": 'd', "日付": 'd', "日時": 'd',
	"to": 't', "an": 't', "à": 't', "a": 't', "para": 't', "宛先": 't', "cc": 't',
	"subject": 's', "betreff": 's', "objet": 's', "asunto": 's', "assunto": 's', "件名": 's',
}

// headerRole is the role of a "Field: value" line's field, 0 for none.
func headerRole(s string) byte {
	s = strings.TrimLeft(strings.TrimFunc(s, unicode.IsSpace), "*")
	c := strings.IndexAny(s, ":：")
	if c <= 0 || c > 24 {
		return 0
	}
	return headerRoles[strings.ToLower(strings.TrimRight(s[:c], " \u00a0*"))]
}

// headerBlock reports whether lines[i] starts a quoted message's header
// block: a From: line and, within the next six lines, two other fields.
func headerBlock(lines []replyLine, i int) bool {
	if headerRole(lines[i].text) != 'f' {
		return false
	}
	var date, to, subject bool
	for j := i + 1; j < len(lines) && j <= i+6; j++ {
		switch headerRole(lines[j].text) {
		case 'd':
			date = true
		case 't':
			to = true
		case 's':
			subject = true
		}
	}
	return date && (to || subject) || to && subject
}

func extractText(s string) string {
	raw := strings.Split(s, "\n")
	lines := make([]replyLine, len(raw))
	for i, l := range raw {
		lines[i].text = l
	}
	from, to, cut := keptLines(lines)
	if !cut {
		return s
	}
	return strings.Join(raw[from:to], "\n")
}

func extractHTML(s string) string {
	lines, starts := htmlLines(s)
	from, to, cut := keptLines(lines)
	if !cut {
		return s
	}
	var drops [][2]int
	if from > 0 {
		drops = append(drops, [2]int{starts[0], pastEndTags(s, starts[from])})
	}
	if to < len(lines) {
		drops = append(drops, [2]int{starts[to], len(s)})
	}
	return removeHTML(s, drops)
}

// pastEndTags skips the end tags and white space at s[i:]: a line that
// starts where a quote ends leaves the quote's end tags to the quote.
func pastEndTags(s string, i int) int {
	for {
		j := i
		for j < len(s) && strings.IndexByte(" \t\r\n", s[j]) >= 0 {
			j++
		}
		if j >= len(s) || s[j] != '<' {
			return i
		}
		t, ok := readTag(s, j)
		if !ok || !t.closing {
			return i
		}
		i = t.end
	}
}

// elementKind is what an element means to the rule; a bit set.
type elementKind uint8

const (
	quoteElement elementKind = 1 << iota
	signatureElement
	historyElement
	preElement
)

func replyElementKind(t htmlTag) elementKind {
	var k elementKind
	class := " " + strings.ToLower(t.attr("class")) + " "
	id := strings.ToLower(t.attr("id"))
	switch {
	case t.name == "blockquote", strings.Contains(class, " gmail_attr "), strings.Contains(class, " yahoo_quoted "),
		strings.Contains(class, " moz-cite-prefix "):
		k |= quoteElement
	case strings.Contains(class, " moz-signature "), strings.Contains(class, " gmail_signature "),
		id == "ms-outlook-mobile-signature":
		k |= signatureElement
	case id == "divrplyfwdmsg", id == "appendonsend", id == "olk_src_body_section",
		id == "mail-editor-reference-message-container", outlookSplitter(t.attr("style")):
		k |= historyElement
	}
	if t.name == "pre" {
		k |= preElement
	}
	return k
}

// outlookSplitter reports whether style is that of the div Outlook puts
// around a quoted message's header block (talon's cut_microsoft_quote):
// border:none;border-top:solid #E1E1E1 1.0pt (#B5C4DF before 2013).
func outlookSplitter(style string) bool {
	style = strings.ToLower(strings.ReplaceAll(style, " ", ""))
	return strings.Contains(style, "border-top:solid#e1e1e1") || strings.Contains(style, "border-top:solid#b5c4df")
}

// openElement is an element whose end tag has not come yet.
type openElement struct {
	name       string
	start, end int // the start tag's place
	kind       elementKind
}

// voidTags have no end tag.
var voidTags = set("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr")

// replyBlockTags end a line besides blockTags.
var replyBlockTags = set("pre", "dl", "dt", "dd", "address", "figure", "main", "nav", "aside")

// htmlWalker reads an HTML body token by token and keeps the elements
// that are open, as far as tags say: enough to cut markup and close what
// the cut leaves open, with no tree.
type htmlWalker struct {
	s      string
	i      int
	open   []openElement
	counts [4]int // open elements of each kind bit
}

// htmlToken is a run of text (tag.name == "") or one tag.
type htmlToken struct {
	tag        htmlTag
	start, end int
}

func (w *htmlWalker) next() (htmlToken, bool) {
	for w.i < len(w.s) {
		start := w.i
		if strings.HasPrefix(w.s[w.i:], "<!--") {
			end := strings.Index(w.s[w.i+4:], "-->")
			if end < 0 {
				w.i = len(w.s)
				return htmlToken{}, false
			}
			w.i += 4 + end + 3
			continue
		}
		t, ok := htmlTag{}, false
		if w.s[w.i] == '<' {
			t, ok = readTag(w.s, w.i)
		}
		if !ok {
			end := strings.IndexByte(w.s[w.i+1:], '<')
			if end < 0 {
				w.i = len(w.s)
			} else {
				w.i += 1 + end
			}
			return htmlToken{start: start, end: w.i}, true
		}
		w.i = t.end
		switch {
		case t.name == "!":
			continue
		case t.closing:
			w.close(t.name)
		case rawTextTags[t.name]:
			w.i = skipRawText(w.s, w.i, t.name)
			continue
		case !voidTags[t.name] && !strings.HasSuffix(t.attrs, "/"):
			e := openElement{name: t.name, start: start, end: t.end, kind: replyElementKind(t)}
			w.open = append(w.open, e)
			w.count(e.kind, 1)
		}
		return htmlToken{tag: t, start: start, end: t.end}, true
	}
	return htmlToken{}, false
}

// close ends the innermost open element called name and those inside it;
// an end tag nothing opened is ignored, as browsers ignore it.
func (w *htmlWalker) close(name string) {
	for j := len(w.open) - 1; j >= 0; j-- {
		if w.open[j].name == name {
			for _, e := range w.open[j:] {
				w.count(e.kind, -1)
			}
			w.open = w.open[:j]
			return
		}
	}
}

func (w *htmlWalker) count(k elementKind, d int) {
	for b := range w.counts {
		if k&(1<<b) != 0 {
			w.counts[b] += d
		}
	}
}

func (w *htmlWalker) inside(k elementKind) bool {
	for b := range w.counts {
		if k&(1<<b) != 0 && w.counts[b] > 0 {
			return true
		}
	}
	return false
}

// htmlLines splits an HTML body into the lines a reader sees, each with
// the offset of the markup that starts it: the first block tag after the
// previous line's text (so a cut there takes the empty paragraphs and
// breaks before a quote with it). Lines without text are left out.
func htmlLines(s string) (lines []replyLine, starts []int) {
	w := htmlWalker{s: s}
	var cur replyLine
	var text strings.Builder
	start := 0
	end := func(at int) {
		if strings.TrimFunc(text.String(), unicode.IsSpace) != "" {
			cur.text = text.String()
			lines, starts = append(lines, cur), append(starts, start)
			cur, start = replyLine{}, at
		}
		text.Reset()
	}
	addText := func(raw string) {
		if strings.IndexByte(raw, '&') >= 0 {
			raw = html.UnescapeString(raw)
		}
		if strings.TrimFunc(raw, unicode.IsSpace) != "" {
			cur.quoted = cur.quoted || w.inside(quoteElement)
			cur.signature = cur.signature || w.inside(signatureElement)
		}
		text.WriteString(raw)
	}
	for {
		tok, ok := w.next()
		if !ok {
			break
		}
		t := tok.tag
		switch {
		case t.name == "" && w.inside(preElement):
			raw := s[tok.start:tok.end]
			for k := strings.IndexByte(raw, '\n'); k >= 0; k = strings.IndexByte(raw, '\n') {
				addText(raw[:k])
				end(tok.end - len(raw) + k + 1)
				raw = raw[k+1:]
			}
			addText(raw)
		case t.name == "":
			addText(lineBreaksToSpaces.Replace(s[tok.start:tok.end]))
		case t.name == "body" && !t.closing && len(lines) == 0:
			text.Reset()
			start = tok.end
		case blockTags[t.name] || replyBlockTags[t.name]:
			end(tok.start)
			if !t.closing && len(w.open) > 0 && w.open[len(w.open)-1].start == tok.start &&
				w.open[len(w.open)-1].kind&historyElement != 0 && !w.inside(quoteElement) {
				cur.history = true
			}
		}
	}
	end(len(s))
	return lines, starts
}

// lineBreaksToSpaces: outside <pre>, a line break in HTML text is a space.
var lineBreaksToSpaces = strings.NewReplacer("\r", " ", "\n", " ", "\t", " ")

// openAt is the elements open at offset at of s.
func openAt(s string, at int) []openElement {
	w := htmlWalker{s: s}
	for w.i < at {
		if _, ok := w.next(); !ok {
			break
		}
	}
	return w.open
}

// removeHTML removes the ranges (ascending, apart) of s and keeps the
// rest well formed: the elements a range leaves open are closed where it
// starts, and those it enters are reopened where it ends.
func removeHTML(s string, ranges [][2]int) string {
	var b strings.Builder
	pos := 0
	for _, r := range ranges {
		b.WriteString(s[pos:r[0]])
		before, after := openAt(s, r[0]), openAt(s, r[1])
		common := 0
		for common < len(before) && common < len(after) && before[common].start == after[common].start {
			common++
		}
		for j := len(before) - 1; j >= common; j-- {
			b.WriteString("</" + before[j].name + ">")
		}
		for _, e := range after[common:] {
			b.WriteString(s[e.start:e.end])
		}
		pos = r[1]
	}
	b.WriteString(s[pos:])
	return b.String()
}
