package core

import (
	"net/url"
	"strings"
	"unicode"
)

// maxLinks is how many links of each body the rule weighs: a message that
// wants a link clicked puts it among its first few.
const maxLinks = 100

// linkContext is how much text around a link the rule reads when the link's
// own label says nothing ("click here", a bare URL): of it, the sentence the
// link stands in.
const linkContext = 160

// Phrases, folded, that ask the reader to verify, confirm, sign in or reset
// a password, in a link's label or in the sentence around a bare link, in
// English, German, French, Spanish, Portuguese, Italian and Dutch.
var linkCues = []string{"verif", "confirm", "conferm", "bestatig", "bevestig", "sign in",
	"sign-in", "signin", "log in", "log-in", "login", "log on", "anmelden", "einloggen", "loggen",
	"aanmelden", "se connecter", "connexion", "connecte", "iniciar sesion", "inicia sesion",
	"iniciar sessao", "inicie sessao", "entrar", "acceder", "accedi", "acessar", "aceder",
	"activat", "activer", "activar", "ativar", "attiva", "activeer", "aktivier", "reset",
	"zurucksetz", "neues passwort", "reinitialis", "restablec", "redefin", "reimposta",
	"recuperar", "validat", "valider", "validar", "magic", "passwor", "wachtwoord",
	"mot de passe", "contrasena", "senha", "approve", "genehmig", "authori", "autoris",
	"autoriz", "freischalt"}

// A sentence that asks the reader to finish signing up names the finishing
// ("complete", "abschließen", "finaliser", "concluir", "voltooien") and the
// sign-up ("registration", "inscription", "cadastro", "registratie").
var (
	finishCues = []string{"complet", "finish", "finalis", "finaliz", "abschl", "abzuschl",
		"conclu", "voltooi", "afrond", "afteronden"}
	signUpCues = []string{"regist", "sign up", "sign-up", "signup", "inscri", "cadastr",
		"anmeldung", "account setup"}
)

// Phrases, folded, of the links a message does not want clicked for signing
// in: unsubscribing, settings, legal pages, help, the web version, reports,
// and the "if this wasn't you" way out of a security message.
var linkNegatives = []string{"unsubscribe", "unsub", "abbestell", "abzubestell", "abmelden",
	"austragen", "afmelden", "uitschrijven", "desinscri", "desabonn", "desuscri", "disiscri",
	"annulla l'iscrizione", "cancella l'iscrizione", "darse de baja", "dar de baja", "baja",
	"cancelar suscrip", "cancelar inscri", "cancelar a inscri", "descadastr", "opt-out", "opt out",
	"optout", "preferences", "preferencias", "preferenze", "voorkeuren", "praferenz",
	"einstellungen", "parametres", "privacy", "datenschutz", "confidentialit", "privacidad",
	"privacidade", "terms", "nutzungsbeding", "conditions", "terminos", "termos", "condizioni",
	"voorwaarden", "help", "hilfe", "aide", "ayuda", "ajuda", "aiuto", "assistenza", "support",
	"browser", "navigateur", "navegador", "view online", "online ansehen", "en ligne",
	"online bekijken", "report", "wasn't me", "not me", "nicht ich", "pas moi", "no fui",
	"nao fui", "non sono stat", "stop receiving", "didn't", "did not", "didnt", "wasn't you",
	"not you", "n'etes pas", "nicht sie", "nicht du", "no solicitaste", "nao foi",
	"nao solicitou", "non sei stat", "non hai richiesto", "niet jij", "niet aangevraagd"}

// Parts of a URL's path or query that name what it is for, in the same
// languages.
var (
	urlCues = []string{"verif", "confirm", "conferm", "bestaetig", "bestatig", "bevestig",
		"magic", "login", "log-in", "signin", "sign-in", "sign_in", "inloggen", "accedi", "/auth/",
		"reset", "password", "passwort", "wachtwoord", "senha", "contrasena", "reimposta",
		"redefin", "restablec", "reinitialis", "zuruecksetz", "activat", "activar", "activer",
		"ativar", "attiva", "activeer", "aktivier", "validat", "valider", "validar", "otp"}
	urlNegatives = []string{"unsubscribe", "unsub", "optout", "opt-out", "opt_out", "preferences",
		"/privacy", "/terms", "/legal", "/help", "/support", "abmelden", "abbestell", "afmelden",
		"uitschrijven", "desinscri", "disiscri"}
)

// Words, folded, that a label made only of says nothing of what the link
// does ("click here", "klicken Sie hier", "clicca qui", "klik op deze
// link"), leaving it to the sentence around it.
var callToActionWords = set("click", "tap", "press", "open", "visit", "follow", "here", "this",
	"the", "link", "button", "below", "now", "please", "or", "oder", "ou", "o", "of", "hier", "klicken", "klick", "sie", "tippen", "tippe", "diesen",
	"den", "folgenden", "bitte", "auf", "ici", "cliquez", "cliquer", "appuyez", "sur", "ce",
	"le", "lien", "bouton", "aqui", "haz", "clic", "pulsa", "pincha", "toca", "en", "este",
	"el", "enlace", "boton", "clique", "toque", "no", "neste", "nesse", "botao", "qui",
	"clicca", "premi", "tocca", "su", "questo", "il", "collegamento", "pulsante", "klik",
	"tik", "op", "deze", "de", "knop")

// Query parameters that name where to go next or who sent the reader, not
// who the reader is.
var (
	ignoredParams = set("ref", "ref_", "lang", "hl", "locale", "continue", "redirect",
		"redirect_uri", "return", "return_to", "returnto", "next", "source", "src", "campaign")
	secretParams = []string{"token", "code", "otp", "key", "sig", "hash", "nonce", "ticket", "secret"}
)

// linkCandidate is one link of a message, with the words that describe it.
type linkCandidate struct {
	url    string
	label  string // the anchor's text, or the sentence before a bare URL on its line
	lead   string // the text before the link on its line
	before string // the text before the link
	after  string // and after it
}

// findLink returns the link the message most wants clicked to sign in,
// verify or reset a password, or "". Anchors of the HTML come first; bare
// URLs of the text body after them (a plain-text mail, or an HTML mail's
// text alternative). code is the one-time code the message gives, if any: a
// link that carries it is the message's own.
func findLink(text string, doc htmlDoc, sender, code string) string {
	code = strings.ReplaceAll(code, "-", "") // as a URL writes "482-913"
	best, bestScore := "", 0
	consider := func(c linkCandidate) {
		if score := scoreLink(c, sender, code); score > bestScore {
			best, bestScore = strings.TrimSpace(c.url), score
		}
	}
	prevEnd := 0
	for _, l := range doc.links {
		before := doc.text[max(prevEnd, l.start-linkContext):l.start]
		consider(linkCandidate{
			url:    l.href,
			label:  l.label,
			lead:   before[strings.LastIndexByte(before, '\n')+1:],
			before: before,
			after:  cutUTF8(doc.text[l.end:], linkContext),
		})
		prevEnd = max(prevEnd, l.end)
	}
	prevEnd = 0
	for i, n := 0, 0; n < maxLinks; n++ {
		start, end := nextURL(text, i)
		if start < 0 {
			break
		}
		before := text[max(prevEnd, start-linkContext):start]
		lead := before[strings.LastIndexByte(before, '\n')+1:]
		consider(linkCandidate{
			url:    text[start:end],
			label:  sentenceBefore(lead),
			lead:   lead,
			before: before,
			after:  cutUTF8(text[end:], linkContext),
		})
		prevEnd, i = end, end
	}
	return best
}

// nextURL finds the next http or https URL in s from i: its start and end,
// or -1. Punctuation that ends a sentence, and a closing bracket the URL did
// not open, are not part of it.
func nextURL(s string, i int) (int, int) {
	for {
		k := strings.Index(s[i:], "://")
		if k < 0 {
			return -1, -1
		}
		at := i + k
		i = at + 3
		start := -1
		switch {
		case at >= 5 && strings.EqualFold(s[at-5:at], "https"):
			start = at - 5
		case at >= 4 && strings.EqualFold(s[at-4:at], "http"):
			start = at - 4
		}
		if start < 0 || start > 0 && isWordRune(rune(s[start-1])) {
			continue
		}
		end := start + strings.IndexFunc(s[start:], func(r rune) bool {
			return unicode.IsSpace(r) || strings.ContainsRune("<>\"'", r)
		})
		if end < start {
			end = len(s)
		}
		opened := s[start:end]
		paren, bracket, brace := strings.Contains(opened, "("), strings.Contains(opened, "["), strings.Contains(opened, "{")
		for end > at+3 {
			c := s[end-1]
			if strings.IndexByte(".,;:!?", c) >= 0 || c == ')' && !paren || c == ']' && !bracket || c == '}' && !brace {
				end--
				continue
			}
			break
		}
		if end > at+3 {
			return start, end
		}
	}
}

// scoreLink rates a link: 0 when it is not one to sign in or verify with,
// else higher the more its words, its URL and its sender say it is. The
// words decide: the label, or for a label that says nothing ("click here",
// the URL itself) the sentence the link stands in.
func scoreLink(c linkCandidate, sender, code string) int {
	u, err := url.Parse(strings.TrimSpace(c.url))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return 0
	}
	label := strings.Trim(fold(c.label), " \t\r\n[](){}<>:-–—→›»|*")
	where := strings.ToLower(u.EscapedPath() + "?" + u.RawQuery)
	// A way out on the link's line ("If you didn't sign in, change your
	// password: …") rules it out whatever its label.
	if anyOf(label, linkNegatives, strings.Contains) || anyOf(fold(c.lead), linkNegatives, strings.Contains) ||
		anyOf(where, urlNegatives, strings.Contains) {
		return 0
	}
	urlCue := anyOf(where, urlCues, strings.Contains)
	score, asked := 0, false
	switch {
	case asksToSignIn(label):
		score, asked = 4, true
	case isGenericLabel(label):
		context := fold(sentenceBefore(c.before) + " " + sentenceAfter(c.after))
		asked = asksToSignIn(context)
		if anyOf(context, linkNegatives, strings.Contains) || !asked && !urlCue {
			return 0
		}
		score = 2
	case urlCue:
		// The URL says what the label does not ("Yes, subscribe me to
		// this list" → /subscribe/confirm?…): the weakest evidence.
		score = 1
	default:
		return 0
	}
	if !carriesToken(u, asked, code) {
		return 0
	}
	if urlCue {
		score += 2
	}
	if sender != "" && site(strings.ToLower(u.Hostname())) == sender {
		score++
	}
	return score
}

// asksToSignIn reports whether folded words ask the reader to verify,
// confirm, sign in, reset a password or finish signing up.
func asksToSignIn(s string) bool {
	return anyOf(s, linkCues, strings.Contains) ||
		anyOf(s, finishCues, strings.Contains) && anyOf(s, signUpCues, strings.Contains)
}

// sentenceBefore is the end of s from its last sentence break on: the
// sentence that leads into a link ("Click the link below to verify:"), ""
// when a sentence ends right before it.
func sentenceBefore(s string) string {
	s = strings.TrimRight(s, " \t\r\n\u00a0")
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "?") {
		return ""
	}
	s = strings.TrimRight(s, " \t\r\n:-–—>»→(")
	cut := -1
	for _, brk := range []string{". ", ".\n", "! ", "!\n", "? ", "?\n", "\n\n"} {
		cut = max(cut, strings.LastIndex(s, brk))
	}
	return s[cut+1:]
}

// sentenceAfter is the start of s up to its first sentence break: the rest
// of the sentence a link stands in ("… here to confirm your account.").
func sentenceAfter(s string) string {
	if cut := strings.IndexAny(s, ".!?\n"); cut >= 0 {
		return s[:cut]
	}
	return s
}

// isGenericLabel reports whether a folded label leaves it to the sentence
// around it to say what the link does: none, the URL itself, or words that
// only ask for a click ("click here", "klicken Sie hier", "klik op deze link").
func isGenericLabel(label string) bool {
	if strings.HasPrefix(label, "http") || strings.HasPrefix(label, "www.") {
		return true
	}
	for _, w := range strings.FieldsFunc(label, func(r rune) bool { return !isWordRune(r) }) {
		if !callToActionWords[w] {
			return false
		}
	}
	return true
}

// carriesToken reports whether a URL carries something that identifies the
// reader: a long random-looking path segment or query value; a short code
// (4 to 12 characters, not a tracking number) after a path segment that
// names its purpose, or in the query of such a
// path (/verify/7H3K9, /confirmar?c=8fK2mQ9x); a short value of a parameter
// named like a secret (token=, code=, sig=); the message's own code; or,
// when the words around the link asked for it, a short-link key
// (/l/Ab9Xz3Qw).
func carriesToken(u *url.URL, asked bool, code string) bool {
	isToken := func(s string, purpose bool) bool {
		return tokenLike(s) || purpose && len(s) >= 4 && len(s) <= 12 && hasDigit(s) && isAlnumASCII(s) ||
			asked && shortToken(s) || code != "" && strings.EqualFold(s, code)
	}
	prev, purpose := "", false
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		purpose = anyOf(strings.ToLower(prev), urlCues, strings.Contains)
		if isToken(seg, purpose) {
			return true
		}
		prev = seg
	}
	// The query of a path whose last segment names its purpose.
	purpose = anyOf(strings.ToLower(prev), urlCues, strings.Contains)
	for pair := range strings.SplitSeq(u.RawQuery+"&"+u.EscapedFragment(), "&") {
		name, value, _ := strings.Cut(pair, "=")
		name = strings.ToLower(name)
		if strings.HasPrefix(name, "utm_") || ignoredParams[name] {
			continue
		}
		if isToken(value, purpose) || len(value) >= 6 && anyOf(name, secretParams, strings.Contains) {
			return true
		}
	}
	return false
}

// shortToken reports whether s looks like the key of a short link: 6 to 15
// letters and digits, switching between them at least three times
// ("Ab9Xz3Qw", not "2025Q1" or "order42").
func shortToken(s string) bool {
	if len(s) < 6 || !isAlnumASCII(s) {
		return false
	}
	switches := 0
	for i := 1; i < len(s); i++ {
		if isDigitByte(s[i]) != isDigitByte(s[i-1]) {
			switches++
		}
	}
	return switches >= 3
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

// tokenLike reports whether s looks machine-made: at least 16 URL-safe
// characters, few separators, and letters and digits mixed the way random
// strings mix them (a slug such as "2025-05-release-notes" does not). An
// encoded URL is not a token.
func tokenLike(s string) bool {
	if len(s) < 16 || strings.Contains(s, "%2F") || strings.Contains(s, "%2f") {
		return false
	}
	separators, switches, upper, lower, digit := 0, 0, false, false, false
	prevDigit, prevLetter := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		isDigit, isLetter := c >= '0' && c <= '9', isASCIILetter(c)
		switch {
		case isDigit:
			digit = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case strings.IndexByte("-_.~", c) >= 0:
			separators++
		case strings.IndexByte("%=+", c) < 0:
			return false
		}
		if isDigit && prevLetter || isLetter && prevDigit {
			switches++
		}
		prevDigit, prevLetter = isDigit, isLetter
	}
	return separators*6 <= len(s) && (switches >= 3 || upper && lower && digit)
}
