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
// a password, in a link's label or in the sentence around a bare link.
var linkCues = []string{"verif", "confirm", "bestatig", "sign in", "sign-in", "signin", "log in",
	"log-in", "login", "log on", "anmelden", "einloggen", "se connecter", "connexion", "connecte",
	"iniciar sesion", "inicia sesion", "iniciar sessao", "inicie sessao", "entrar", "acceder",
	"acessar", "aceder", "activat", "activer", "activar", "ativar", "aktivier", "reset",
	"zurucksetz", "neues passwort", "reinitialis", "restablec", "redefin", "recuperar",
	"validat", "valider", "validar", "magic", "passwor", "mot de passe", "contrasena", "senha",
	"approve", "genehmig", "authori", "autoris", "autoriz", "freischalt"}

// Phrases, folded, of the links a message does not want clicked for signing
// in: unsubscribing, settings, legal pages, help, the web version, reports,
// and the "if this wasn't you" way out of a security message.
var linkNegatives = []string{"unsubscribe", "unsub", "abbestell", "abmelden", "austragen",
	"desinscri", "desabonn", "desuscri", "darse de baja", "dar de baja", "baja", "cancelar suscrip",
	"cancelar inscri", "cancelar a inscri", "descadastr", "opt-out", "opt out", "optout",
	"preferences", "preferencias", "praferenz", "einstellungen", "parametres", "privacy",
	"datenschutz", "confidentialit", "privacidad", "privacidade", "terms", "nutzungsbeding",
	"conditions", "terminos", "termos", "help", "hilfe", "aide", "ayuda", "ajuda", "support",
	"browser", "navigateur", "navegador", "view online", "online ansehen", "en ligne", "report",
	"wasn't me", "not me", "nicht ich", "pas moi", "no fui", "nao fui", "stop receiving",
	"didn't", "did not", "didnt", "wasn't you", "not you", "n'etes pas", "nicht sie", "nicht du",
	"no solicitaste", "nao foi", "nao solicitou"}

// Parts of a URL's path or query that name what it is for.
var (
	urlCues = []string{"verif", "confirm", "magic", "login", "log-in", "signin", "sign-in",
		"sign_in", "/auth/", "reset", "password", "passwort", "activat", "validat", "otp"}
	urlNegatives = []string{"unsubscribe", "unsub", "optout", "opt-out", "opt_out", "preferences",
		"/privacy", "/terms", "/legal", "/help", "/support", "abmelden", "desinscri"}
)

// genericLabels are link labels that leave the sentence around them to say
// what the link does.
var genericLabels = set("", "here", "click here", "this link", "link", "the link", "button",
	"hier", "hier klicken", "diesen link", "ici", "cliquez ici", "ce lien", "aqui",
	"haz clic aqui", "pulsa aqui", "clique aqui", "este link", "este enlace", "enlace", "lien")

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
	label  string // the anchor's text, or the text before a bare URL on its line
	before string // the text before the link
	after  string // and after it
}

// findLink returns the link the message most wants clicked to sign in,
// verify or reset a password, or "". Anchors of the HTML come first; bare
// URLs of the text body after them (a plain-text mail, or an HTML mail's
// text alternative).
func findLink(text string, doc htmlDoc, sender string) string {
	best, bestScore := "", 0
	consider := func(c linkCandidate) {
		if score := scoreLink(c, sender); score > bestScore {
			best, bestScore = strings.TrimSpace(c.url), score
		}
	}
	prevEnd := 0
	for _, l := range doc.links {
		consider(linkCandidate{
			url:    l.href,
			label:  l.label,
			before: doc.text[max(prevEnd, l.start-linkContext):l.start],
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
		consider(linkCandidate{
			url:    text[start:end],
			label:  before[strings.LastIndexByte(before, '\n')+1:],
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
// else higher the more its label, its URL and its sender say it is.
func scoreLink(c linkCandidate, sender string) int {
	u, err := url.Parse(strings.TrimSpace(c.url))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return 0
	}
	label := strings.Trim(fold(c.label), " \t\r\n[](){}<>:-–—→›»|*")
	where := strings.ToLower(u.EscapedPath() + "?" + u.RawQuery)
	if anyOf(label, linkNegatives, strings.Contains) || anyOf(where, urlNegatives, strings.Contains) || !carriesToken(u) {
		return 0
	}
	urlCue := anyOf(where, urlCues, strings.Contains)
	score := 0
	switch {
	case anyOf(label, linkCues, strings.Contains):
		score = 4
	case isGenericLabel(label):
		context := fold(sentenceBefore(c.before) + " " + sentenceAfter(c.after))
		if anyOf(context, linkNegatives, strings.Contains) || !anyOf(context, linkCues, strings.Contains) && !urlCue {
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
	if urlCue {
		score += 2
	}
	if sender != "" && site(strings.ToLower(u.Hostname())) == sender {
		score++
	}
	return score
}

// sentenceBefore is the end of s from its last sentence break on: the
// sentence that leads into a link ("Click the link below to verify:").
func sentenceBefore(s string) string {
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
// around it to say what the link does: none, "click here", the URL itself.
func isGenericLabel(label string) bool {
	return genericLabels[strings.TrimRight(label, ".!")] || strings.HasPrefix(label, "http") ||
		strings.HasPrefix(label, "www.")
}

// carriesToken reports whether a URL carries something that identifies the
// reader: a long random-looking path segment or query value, a short code
// after a path segment that names its purpose, or a short value of a
// parameter named like a secret (token=, code=, sig=).
func carriesToken(u *url.URL) bool {
	prev := ""
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		// A long random segment, or a short code right after a segment
		// that names its purpose: /login/48291, /verify/7H3K9.
		purpose := anyOf(strings.ToLower(prev), urlCues, strings.Contains)
		if tokenLike(seg) || purpose && len(seg) >= 4 && hasDigit(seg) && isAlnumASCII(seg) {
			return true
		}
		prev = seg
	}
	for pair := range strings.SplitSeq(u.RawQuery+"&"+u.EscapedFragment(), "&") {
		name, value, _ := strings.Cut(pair, "=")
		name = strings.ToLower(name)
		if strings.HasPrefix(name, "utm_") || ignoredParams[name] {
			continue
		}
		if tokenLike(value) || len(value) >= 6 && anyOf(name, secretParams, strings.Contains) {
			return true
		}
	}
	return false
}

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
