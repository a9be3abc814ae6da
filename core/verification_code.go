package core

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// How far from a candidate code the rule looks for the words around it,
// counted in words.
const (
	strongCueBefore    = 12 // "Use this code to finish setting up this recovery email: 482913"
	announcedCueBefore = 24 // "Your code for a purchase of $129.99 at AMAZON MKTPLACE is 38201946"
	strongCueAfter     = 6  // "482913 is your Google verification code"
	weakCueWindow      = 4  // "Use 4829 to verify"
	contextBefore      = 8  // "Your order is confirmed. Confirmation code: 4829"
	promoWindow        = 8  // "Use code SPRING25 for 20% off"
	adjacentBefore     = 2  // "Order No. 48213", "phone ending in 4567"
)

// Cue words, folded (lower case, no accents). A strong cue names a code; a
// weak one names what a code is for, and counts only close by.
var (
	strongCueWords = set("code", "codes", "codigo", "codigos", "kod", "kode", "otp", "otps", "pin",
		"tan", "mtan", "smstan", "pushtan", "passcode", "2fa", "mfa", "token", "clave")
	strongCueSuffixes = []string{"code", "codigo", "otp"} // Sicherheitscode, passcode, mTAN-OTP
	weakCueWords      = set("sign", "signin", "log", "entrar", "entre", "acceder", "acessar",
		"one-time", "einmal", "einmalig", "unique", "usage", "uso", "unico")
	weakCuePrefixes = []string{"verif", "confirm", "bestatig", "authent", "autentic", "anmeld",
		"einlog", "login", "logon", "connex", "connect", "sesion", "sessao", "acces", "passwor",
		"kennwort", "contrasen", "senha", "securit", "sicherheit", "seguridad", "seguranc",
		"aktivier", "activ", "ativ", "valid", "identif"}

	// A word ending in "code" that names some other code: QR code, zip code,
	// Gutscheincode, Fehlercode.
	otherCodeStems = []string{"promo", "gutschein", "rabatt", "aktion", "coupon", "cupon", "cupom",
		"voucher", "discount", "descuento", "desconto", "bar", "qr", "zip", "post", "fehler",
		"error", "erreur", "quell", "source", "dress", "country", "area", "sort", "swift",
		"bank", "track", "rastreio", "referral", "gift"}

	// Words right before a number that say what the number is.
	adjacentNegatives = set("nr", "nro", "num", "numero", "nummer", "number", "nº", "tel",
		"phone", "telefon", "telephone", "telefone", "telefono", "fone", "fax", "mobile",
		"handy", "celular", "cel", "ending", "endet", "endend", "terminant", "terminando",
		"terminada", "terminado", "final", "zip", "plz", "cep", "postal", "postcode",
		"postleitzahl", "iban", "bic", "swift", "ref", "id", "ext", "apt", "suite", "room",
		"zimmer", "gate", "seat", "platform", "gleis", "version", "build", "since", "seit",
		"desde", "depuis", "year", "jahr", "ano", "annee", "cvv", "kundennummer", "error",
		"fehler", "erreur", "errorcode")
	// Words right after a number that make it an amount or a quantity.
	unitWords = set("eur", "euro", "euros", "usd", "gbp", "chf", "brl", "mxn", "ars", "cop",
		"clp", "dollar", "dollars", "reais", "real", "pesos", "peso", "points", "punkte",
		"puntos", "pontos", "meilen", "miles", "millas", "milhas", "km", "kg", "mb", "gb", "tb",
		"min", "mins", "minute", "minutes", "minuten", "minuto", "minutos", "hour", "hours",
		"stunden", "stunde", "heure", "heures", "hora", "horas", "sec", "secs", "second",
		"seconds", "sekunden", "secondes", "segundos", "day", "days", "tag", "tage", "tagen",
		"jour", "jours", "dia", "dias", "items", "artikel", "article", "articles", "articulos",
		"itens", "followers", "likes", "messages", "nachrichten")
	// Words in the sentence before a number that make it a reference of some
	// other kind: orders, parcels, bookings, invoices, tickets.
	contextNegatives = set("order", "orders", "ordered", "invoice", "invoices", "receipt",
		"receipts", "recu", "recibo", "recibos", "tracking", "track", "commande", "commandes",
		"pedido", "pedidos", "rechnung", "factura", "facture", "fatura", "paket", "package",
		"colis", "paquete", "pacote", "suivi", "seguimiento", "shipment", "shipping",
		"versand", "envio", "booking", "buchung", "reservation", "reserva", "itinerary",
		"flight", "flug", "vuelo", "voo", "ticket", "quittung", "lieferung", "livraison",
		"entrega", "referral", "error", "fehler", "erreur")
	contextNegativePrefixes = []string{"bestell", "encomend", "factur", "rastre", "reservier",
		"itinerar", "sendung"}
	// Verbs that introduce a code at the end of a sentence.
	copulas = set("is", "lautet", "ist", "est", "es", "e", "sont", "son", "sao", "sera")
	// Words that make a code a promotion (as does a "%" nearby).
	promoWords = set("promo", "promocode", "coupon", "cupon", "cupom", "gutschein", "rabatt",
		"discount", "descuento", "desconto", "reduction", "voucher", "sale", "offer", "angebot",
		"oferta", "offre", "checkout")
)

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

type cue uint8

const (
	noCue cue = iota
	weakCue
	strongCue
	otherCode // a word naming some other kind of code
)

// cueOf classifies one folded word. A hyphenated word is classified by its
// strongest part ("sign-in", "E-Mail-Bestätigungscode").
func cueOf(w string) cue {
	if w == "" {
		return noCue
	}
	if (strings.HasSuffix(w, "code") || strings.HasSuffix(w, "codigo")) && w != "code" && w != "codigo" &&
		anyOf(w, otherCodeStems, strings.Contains) {
		return otherCode
	}
	best := noCue
	for part := range strings.SplitSeq(w, "-") {
		c := noCue
		switch {
		case strongCueWords[part] || len(part) > 4 && anyOf(part, strongCueSuffixes, strings.HasSuffix):
			c = strongCue
		case weakCueWords[part] || anyOf(part, weakCuePrefixes, strings.HasPrefix):
			c = weakCue
		}
		best = max(best, c)
	}
	if weakCueWords[w] { // "one-time" as a whole
		best = max(best, weakCue)
	}
	return best
}

// codeText is one text (a subject or a body) cut into words, with each
// word's folded form computed when first needed.
type codeText struct {
	s      string
	words  []span
	folded map[int]foldedWord // by word, those folded so far: few are
	buf    *[]span            // where words came from, for release
}

// span is one word of a text: a run of letters and digits, with the
// punctuation that joins them inside a word ("sign-in", "G-482913", "12:30",
// "1.299,00", "12/05/2025"). It holds no pointer, so that the GC neither
// scans nor clears a text's words.
type span struct {
	start, end int32 // a text is at most verificationTextLimit long
}

// foldedWord is a word's folded form and its cue.
type foldedWord struct {
	folded string
	cue    cue
}

// spans keeps the words of texts read, for the next: every received
// message is read, and its words were a sixth of what receiving a 5 KB
// message allocated.
var spans = sync.Pool{New: func() any { return new([]span) }}

// maxPooledSpans bounds the slices kept: a long text's are left to the GC.
const maxPooledSpans = 16 << 10

func newCodeText(s string) *codeText {
	buf := spans.Get().(*[]span)
	return &codeText{s: s, words: splitWords((*buf)[:0], s), buf: buf}
}

// release gives t's words back; t is not used after.
func (t *codeText) release() {
	if cap(t.words) <= maxPooledSpans {
		*t.buf = t.words[:0]
		spans.Put(t.buf)
	}
}

func (t *codeText) word(i int) string { return t.s[t.words[i].start:t.words[i].end] }

// folding is word i folded, computed once.
func (t *codeText) folding(i int) foldedWord {
	if f, ok := t.folded[i]; ok {
		return f
	}
	w := fold(t.word(i))
	f := foldedWord{w, cueOf(w)}
	if t.folded == nil {
		t.folded = map[int]foldedWord{}
	}
	t.folded[i] = f
	return f
}

func (t *codeText) fold(i int) string { return t.folding(i).folded }

// cue classifies word i (see cueOf).
func (t *codeText) cue(i int) cue { return t.folding(i).cue }

// findCode returns the most likely one-time code of a message, or "": the
// best of the subject and the text body; the HTML's text is read only when
// they have none.
func findCode(subject string, bodies ...string) string {
	for _, body := range bodies {
		if c := originBoundCode(body); c != "" {
			return c
		}
	}
	if subjectNamesOther(subject) {
		return ""
	}
	best, bestScore := bestCode(subject)
	for _, body := range bodies {
		if code, score := bestCode(body); score > bestScore {
			best, bestScore = code, score
		}
		if best != "" {
			break
		}
	}
	return best
}

// bestCode returns the best-scoring code in s and its score.
func bestCode(s string) (string, int) {
	best, bestScore := "", 0
	t := newCodeText(s)
	defer t.release()
	for i := 0; i < len(t.words); i++ {
		code, last := t.candidate(i)
		if code != "" {
			if score := t.score(i, last, code); score > bestScore {
				best, bestScore = code, score
			}
		}
		i = last
	}
	return best, bestScore
}

// candidate returns the code the words from i on would form, and the index
// of the last of them, or "" when they are not shaped like a code. Digits
// grouped by one space ("482 913") or set one to a box ("4 8 2 9 1 3") are
// joined; longer sequences of digit groups are phone numbers and the like.
func (t *codeText) candidate(i int) (string, int) {
	w := t.word(i)
	if !isDigits(w) {
		if code := codeShape(w); code != "" && !t.nextToIdentifier(i, i) {
			return code, i // not "DE89 3704 0044 …", the start of an IBAN
		}
		return "", i
	}
	last := i
	for last+1 < len(t.words) && isDigits(t.word(last+1)) {
		gap := t.s[t.words[last].end:t.words[last+1].start]
		if len(w) == 1 && len(t.word(last+1)) == 1 && len(gap) <= 64 && strings.TrimSpace(gap) == "" {
			last++
		} else if gap == " " || gap == "\u00a0" {
			last++
		} else {
			break
		}
	}
	if t.nextToIdentifier(i, last) {
		return "", last // "DE89 3704 0044": part of an IBAN
	}
	switch n := last - i + 1; {
	case n == 1:
		if len(w) >= 4 && len(w) <= 10 {
			return w, i
		}
	case n == 2:
		second := t.word(last)
		if len(w) == len(second) && (len(w) == 3 || len(w) == 4) {
			return w + second, last
		}
	case len(w) == 1 && n >= 4 && n <= 10:
		var b strings.Builder
		for k := i; k <= last; k++ {
			if len(t.word(k)) != 1 {
				return "", last
			}
			b.WriteString(t.word(k))
		}
		return b.String(), last
	}
	return "", last
}

// nextToIdentifier reports whether the words first..last stand one space
// from a group of digits or a word with digits, as the parts of an IBAN or
// a licence number do.
func (t *codeText) nextToIdentifier(first, last int) bool {
	spaced := func(a, b int) bool {
		gap := t.s[t.words[a].end:t.words[b].start]
		return gap == " " || gap == "\u00a0"
	}
	return first > 0 && spaced(first-1, first) && hasDigit(t.word(first-1)) ||
		last+1 < len(t.words) && spaced(last, last+1) && hasDigit(t.word(last+1))
}

// codeShape returns w when it is shaped like a code that is not plain
// digits: "G-482913", "482-913", "ABC-DEF", "X7K9QP".
func codeShape(w string) string {
	if len(w) < 4 || len(w) > 11 || !isUpperAlnumBesideHyphens(w) {
		return ""
	}
	if a, b, ok := strings.Cut(w, "-"); ok {
		switch {
		case strings.Contains(b, "-"):
		case len(a) >= 1 && len(a) <= 2 && isUpperAlnum(a) && !hasDigit(a) && isDigits(b) && len(b) >= 4 && len(b) <= 8:
			return w
		case isDigits(a) && isDigits(b) && len(a) == len(b) && (len(a) == 3 || len(a) == 4):
			return w
		case len(a) >= 3 && len(a) <= 5 && len(b) >= 3 && len(b) <= 5 && isUpperAlnum(a) && isUpperAlnum(b) &&
			!(isDigits(a) && isDigits(b)):
			return w
		}
		return ""
	}
	if len(w) >= 4 && len(w) <= 10 && isUpperAlnum(w) && hasDigit(w) && !isDigits(w) {
		return w
	}
	return ""
}

// score rates the candidate made of words first..last: 0 when it is not a
// code, else higher the nearer and stronger the cue word.
func (t *codeText) score(first, last int, code string) int {
	if t.markedAsOther(first, last) {
		return 0
	}
	cue := t.cueScore(first, last, code)
	if cue == 0 || t.isPromotion(first, last) {
		return 0
	}
	for k := first - 1; k >= 0 && k >= first-contextBefore; k-- {
		if t.cue(k) == otherCode || namesOther(t.fold(k)) {
			return 0
		}
	}
	return cue
}

// cueScore rates the cue words around the candidate: 0 without one, else
// higher the nearer and stronger the nearest.
func (t *codeText) cueScore(first, last int, code string) int {
	best := 0
	consider := func(k, d int) {
		switch t.cue(k) {
		case strongCue:
			best = max(best, 100-4*d)
		case weakCue:
			if d <= weakCueWindow {
				best = max(best, 60-4*d)
			}
		}
	}
	// A code the sentence leads up to ("Your code for … is: 482913") may be
	// further from its cue, as long as the cue is in the same sentence.
	window, sentence := strongCueBefore, true
	if t.isAnnounced(first) {
		window = announcedCueBefore
	}
	for d := 1; d <= window && first-d >= 0; d++ {
		k := first - d
		sentence = sentence && !strings.ContainsAny(t.s[t.words[k].end:t.words[k+1].start], ".!?\n")
		if d > strongCueBefore && !sentence {
			break
		}
		consider(k, d)
	}
	if isYear(code) {
		// A year is a code only right after its cue: "Your PIN is 2047".
		if best < 100-4*3 {
			return 0
		}
		return best
	}
	for d := 1; d <= strongCueAfter && last+d < len(t.words); d++ {
		consider(last+d, d)
	}
	return best
}

// isAnnounced reports whether the word before the candidate at first is a
// colon or a verb that introduces it: "is", "lautet", "est", "es", "é".
func (t *codeText) isAnnounced(first int) bool {
	if first == 0 {
		return false
	}
	between := strings.TrimSpace(t.s[t.words[first-1].end:t.words[first].start])
	return between == ":" || between == "" && copulas[t.fold(first-1)]
}

// namesOther reports whether a folded word makes a nearby number some other
// kind of reference: an order, a parcel, a booking (as does a word naming
// another kind of code, see otherCode).
func namesOther(w string) bool {
	return contextNegatives[w] || anyOf(w, contextNegativePrefixes, strings.HasPrefix) || strings.HasSuffix(w, "nummer")
}

// subjectNamesOther reports whether a subject speaks of an order, a parcel,
// a booking or the like and names no code: such a message's numbers are
// references, whatever words stand next to them ("Reservation confirmed",
// then "Confirmation code HMZ4K9QX2T").
func subjectNamesOther(subject string) bool {
	t := newCodeText(subject)
	defer t.release()
	other := false
	for i := range t.words {
		switch t.cue(i) {
		case strongCue:
			return false
		case otherCode:
			other = true
		}
		other = other || namesOther(t.fold(i))
	}
	return other
}

// markedAsOther reports whether the characters and words right around the
// candidate make it something else: a price, a phone number, an order
// number, a masked card number, a year, a quantity.
func (t *codeText) markedAsOther(first, last int) bool {
	before := t.s[:t.words[first].start]
	before = strings.TrimSuffix(strings.TrimSuffix(before, " "), "\u00a0")
	if r, _ := utf8.DecodeLastRuneInString(before); strings.ContainsRune("#$€£¥₹+*©№°)", r) {
		return true
	}
	after := t.s[t.words[last].end:]
	after = strings.TrimPrefix(strings.TrimPrefix(after, " "), "\u00a0")
	if r, _ := utf8.DecodeRuneInString(after); strings.ContainsRune("%€$£¥°", r) {
		return true
	}
	for k := first - 1; k >= 0 && k >= first-adjacentBefore; k-- {
		w := t.fold(k)
		if adjacentNegatives[w] {
			return true
		}
		// "No. 48213", "Nr. 48213"
		if (w == "no" || w == "n") && strings.HasPrefix(t.s[t.words[k].end:], ".") {
			return true
		}
	}
	return last+1 < len(t.words) && unitWords[t.fold(last+1)]
}

// isPromotion reports whether the candidate sits among the words of an offer
// ("Use code SPRING25 for 20% off").
func (t *codeText) isPromotion(first, last int) bool {
	for k := max(0, first-promoWindow); k < len(t.words) && k <= last+promoWindow; k++ {
		if k >= first && k <= last {
			continue
		}
		if promoWords[t.fold(k)] || strings.HasPrefix(t.s[t.words[k].end:], "%") {
			return true
		}
	}
	return false
}

// originBoundCode reads the origin-bound line of the WebOTP and Apple
// formats ("@example.com #482913"), the one place a text says for sure what
// its code is.
func originBoundCode(s string) string {
	for s != "" {
		line, rest, _ := strings.Cut(s, "\n")
		s = rest
		if !strings.HasPrefix(line, "@") {
			continue
		}
		host, tail, ok := strings.Cut(strings.TrimSpace(line[1:]), " ")
		tail = strings.TrimSpace(tail)
		if !ok || host == "" || !strings.HasPrefix(tail, "#") {
			continue
		}
		code, _, _ := strings.Cut(tail[1:], " ")
		if len(code) >= 4 && len(code) <= 10 && isAlnumASCII(code) {
			return code
		}
	}
	return ""
}

// splitWords cuts s into words, appended to words, passing over URLs (a
// number in a link is not the code the reader is asked to type).
func splitWords(words []span, s string) []span {
	if cap(words) < len(s)/4 {
		words = make([]span, 0, len(s)/4)
	}
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf && !asciiWord[c] { // spaces and punctuation, most often
			i++
			continue
		}
		r, n := runeAt(s, i)
		if !isWordRune(r) {
			i += n
			continue
		}
		if u := urlLength(s[i:]); u > 0 {
			i += u
			continue
		}
		start := i
		i += n
		prev := r
		for i < len(s) {
			for i < len(s) && asciiWord[s[i]] { // the common case, byte by byte
				prev, i = rune(s[i]), i+1
			}
			if i == len(s) || s[i] < utf8.RuneSelf && !asciiJoiner[s[i]] {
				break // the end, or an ASCII character that joins no words
			}
			r, n := runeAt(s, i)
			if isWordRune(r) {
				prev, i = r, i+n
				continue
			}
			if i+n < len(s) {
				if next, m := runeAt(s, i+n); joinsWord(prev, r, next) {
					prev, i = next, i+n+m
					continue
				}
			}
			break
		}
		words = append(words, span{start: int32(start), end: int32(i)})
	}
	return words
}

// asciiWord marks the ASCII letters and digits.
var asciiWord = func() (t [256]bool) {
	for c := range 128 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	return t
}()

// asciiJoiner marks the ASCII characters joinsWord may find inside a word.
var asciiJoiner = func() (t [256]bool) {
	for _, c := range "-/'.,:" {
		t[c] = true
	}
	return t
}()

// runeAt decodes the character at s[i], quickly when it is ASCII.
func runeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiWord[r]
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// joinsWord reports whether sep, between prev and next, is inside a word:
// hyphens, slashes and apostrophes between any letters or digits; points,
// commas and colons between digits (decimals, times, dates).
func joinsWord(prev, sep, next rune) bool {
	if !isWordRune(next) {
		return false
	}
	switch sep {
	case '-', '/', '\'', '’':
		return true
	case '.', ',', ':':
		return isASCIIDigit(prev) && isASCIIDigit(next)
	}
	return false
}

// urlLength is the length of the URL s starts with, or 0.
func urlLength(s string) int {
	if c := s[0] | 0x20; c != 'h' && c != 'w' {
		return 0
	}
	if !hasPrefixFold(s, "http://") && !hasPrefixFold(s, "https://") && !hasPrefixFold(s, "www.") {
		return 0
	}
	end := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune("<>\"'", r) })
	if end < 0 {
		return len(s)
	}
	return end
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func isASCIIDigit(r rune) bool { return r >= '0' && r <= '9' }

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}

func isUpperAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

// isUpperAlnumBesideHyphens reports whether s is isUpperAlnum with its
// hyphens taken out (asked of every word: it allocates nothing).
func isUpperAlnumBesideHyphens(s string) bool {
	alnum := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
			alnum = true
		case c != '-':
			return false
		}
	}
	return alnum
}

func isAlnumASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if !asciiWord[s[i]] {
			return false
		}
	}
	return s != ""
}

// isYear reports whether code is a plain four-digit year from 1900 to 2099.
func isYear(code string) bool {
	return len(code) == 4 && isDigits(code) && (code[:2] == "19" || code[:2] == "20")
}
