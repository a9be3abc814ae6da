package core

import (
	"fmt"
	"strings"
	"testing"
)

// verificationCase is one example of the table: a message and the code or
// link expected of it.
type verificationCase struct {
	name string
	in   ReceivedText
	want string
}

// checkCases runs the examples, comparing the field of the result that
// field reads ("" for nil).
func checkCases(t *testing.T, cases []verificationCase, field func(*Verification) string) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if v := FindVerification(tc.in); v != nil {
				got = field(v)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFindVerificationCodes(t *testing.T) {
	checkCases(t, []verificationCase{
		// Shapes.
		{"six digits after cue", ReceivedText{Text: "Your verification code is 482913."}, "482913"},
		{"four digits", ReceivedText{Text: "Your Uber code: 4829. Never share this code."}, "4829"},
		{"ten digits", ReceivedText{Text: "Security code: 4829137065"}, "4829137065"},
		{"cue after", ReceivedText{Text: "482913 is your Amazon OTP. Do not share it."}, "482913"},
		{"G- prefix", ReceivedText{Text: "G-482913 is your Google verification code."}, "G-482913"},
		{"hyphenated digits", ReceivedText{Text: "Your WhatsApp code: 482-913"}, "482-913"},
		{"letters with hyphen", ReceivedText{Subject: "Slack confirmation code: ABC-DEF"}, "ABC-DEF"},
		{"letters and digits", ReceivedText{Text: "Here is the Steam Guard code you need: X7K9Q"}, "X7K9Q"},
		{"groups of three joined", ReceivedText{Text: "Your code is 482 913"}, "482913"},
		{"groups with a no-break space", ReceivedText{Text: "Code: 4829\u00a01370"}, "48291370"},
		{"digits in boxes", ReceivedText{HTML: "<p>Your code</p><table><tr><td>4</td><td>8</td><td>2</td><td>9</td></tr></table>"}, "4829"},
		{"code in subject only", ReceivedText{Subject: "Your login code is 715204", Text: "Welcome back."}, "715204"},
		{"origin-bound line wins", ReceivedText{Text: "Call 555-0199. Code 1111 was old.\n\n@apple.com #593017 %apple.com"}, "593017"},
		{"year right after its cue", ReceivedText{Text: "Your PIN is 2047"}, "2047"},
		{"announced far from its cue", ReceivedText{Text: "Your one-time code for a purchase of $129.99 at AMAZON MKTPLACE is 38201946."}, "38201946"},
		{"nearest cue wins", ReceivedText{Text: "Security code: 7391\nFor help call +1 425 555 0188 or use code 1234 later in the text far away from everything"}, "7391"},
		{"HTML only", ReceivedText{HTML: "<style>.a{color:#123456}</style><p>Your verification code:</p><div class=code>604218</div>"}, "604218"},
		{"HTML entities", ReceivedText{HTML: "<p>Votre code de v&eacute;rification&nbsp;: <b>930271</b></p>"}, "930271"},

		// Languages.
		{"German", ReceivedText{Text: "Dein Bestätigungscode lautet 731905."}, "731905"},
		{"German compound", ReceivedText{Text: "Ihr Einmalpasswort (OTP): 381046"}, "381046"},
		{"German mTAN", ReceivedText{Text: "Ihre mTAN für die Überweisung von 1.250,00 EUR an DE89 3704 0044 0532 0130 00 lautet: 482913."}, "482913"},
		{"French", ReceivedText{Text: "Votre code de sécurité pour valider votre paiement de 89,90 EUR chez FNAC est : 73019284."}, "73019284"},
		{"Spanish", ReceivedText{Text: "Tu código de verificación es 846213"}, "846213"},
		{"Spanish clave", ReceivedText{Text: "BBVA: La clave para confirmar tu operación de 150,00 EUR es 482913."}, "482913"},
		{"Portuguese", ReceivedText{Text: "Seu código de verificação é 318274. Não compartilhe."}, "318274"},
		{"Portuguese weak cue", ReceivedText{Text: "Use 482913 para entrar no iFood."}, "482913"},
		{"sign in, weak cue close by", ReceivedText{Text: "Use 4829 to sign in"}, "4829"},

		// Negatives.
		{"no cue", ReceivedText{Text: "We shipped 482913 widgets last year."}, ""},
		{"weak cue too far", ReceivedText{Text: "Confirm your attendance at the meeting on the third floor next to 4821"}, ""},
		{"order number", ReceivedText{Text: "Confirmation code for order 48213: see below"}, ""},
		{"order in the sentence", ReceivedText{Text: "Your order is confirmed. Confirmation code: 4829"}, ""},
		{"order subject vetoes", ReceivedText{Subject: "Reservation confirmed for Lisbon", Text: "Confirmation code\nHMZ4K9QX2T"}, ""},
		{"price", ReceivedText{Text: "Your code applies to $4999 purchases"}, ""},
		{"amount with decimals", ReceivedText{Text: "Code: 1.234,56"}, ""},
		{"euro after", ReceivedText{Text: "Code 4999 €"}, ""},
		{"currency word after", ReceivedText{Text: "Your code saves 5000 EUR"}, ""},
		{"phone number", ReceivedText{Text: "Verification questions? Call 415 555 0199"}, ""},
		{"phone with area code", ReceivedText{Text: "Code help: (415) 555-0199"}, ""},
		{"phone with plus", ReceivedText{Text: "Code: +4930123456"}, ""},
		{"date", ReceivedText{Text: "Your code expires on 12/05/2025"}, ""},
		{"ISO date", ReceivedText{Text: "Verification code issued 2025-05-12"}, ""},
		{"time", ReceivedText{Text: "Your code was sent at 14:32"}, ""},
		{"year", ReceivedText{Text: "Verify your account. © 2025 Google LLC"}, ""},
		{"year near a weak cue", ReceivedText{Text: "Confirm your details for 2025"}, ""},
		{"masked card", ReceivedText{Text: "Security code sent to card ****4821"}, ""},
		{"card ending", ReceivedText{Text: "Your code was sent to the phone ending in 4567"}, ""},
		{"hash number", ReceivedText{Text: "Code review for PR #4821"}, ""},
		{"zip code", ReceivedText{Text: "Zip code 94043"}, ""},
		{"postal code French", ReceivedText{Text: "Code postal : 75008"}, ""},
		{"promo code", ReceivedText{Text: "Use code SPRING25 for 25% off your next order."}, ""},
		{"Gutscheincode", ReceivedText{Text: "Mit dem Gutscheincode LESEN15 sparen Sie heute."}, ""},
		{"promo at checkout", ReceivedText{Text: "Use code 9193 at checkout."}, ""},
		{"error code", ReceivedText{Text: "Fehlercode 4021: Verbindung fehlgeschlagen"}, ""},
		{"tracking number", ReceivedText{Text: "Tracking code: 1Z999AA10123456784"}, ""},
		{"IBAN start", ReceivedText{Text: "Code an DE89 3704 0044"}, ""},
		{"IBAN start alone", ReceivedText{Text: "Code: DE89 3704"}, ""},
		{"meeting PIN in three groups", ReceivedText{Text: "Join by phone +1 650-555-0123 PIN: 482 193 771#"}, ""},
		{"three-digit groups unequal", ReceivedText{Text: "Your code: 1 299,00"}, ""},
		{"number in a URL", ReceivedText{Text: "Code: https://example.com/track?id=482913"}, ""},
		{"lower-case word", ReceivedText{Text: "Your code word is banana42"}, ""},
		{"quantity", ReceivedText{Text: "Verification takes 1440 minutes"}, ""},
		{"empty", ReceivedText{}, ""},
	}, func(v *Verification) string { return v.Code })
}

func TestFindVerificationLinks(t *testing.T) {
	const tok = "Zx8pQ2vT9kLm4Rn7Ws3Yb6Hd"
	verify := "https://example.com/verify?token=" + tok
	checkCases(t, []verificationCase{
		{"button label", ReceivedText{HTML: `<a href="` + verify + `">Verify email address</a>`}, verify},
		{"entities in href", ReceivedText{HTML: `<a href="https://example.com/login?t=` + tok + `&amp;next=%2Fhome">Sign in</a>`}, "https://example.com/login?t=" + tok + "&next=%2Fhome"},
		{"unquoted href, upper case tag", ReceivedText{HTML: `<A HREF=` + verify + `>Confirm</A>`}, verify},
		{"image button alt", ReceivedText{HTML: `<a href="` + verify + `"><img src="b.png" alt="Confirm your account"></a>`}, verify},
		{"click here with the sentence", ReceivedText{HTML: `<p>Please <a href="` + verify + `">click here</a> to confirm your account.</p>`}, verify},
		{"bare URL after its sentence", ReceivedText{Text: "Click the link below to reset your password:\n\n" + verify + "\n\nThanks"}, verify},
		{"label on the line", ReceivedText{Text: "Sign in to Acme: https://acme.example/l/" + tok + " (expires in 15 min)"}, "https://acme.example/l/" + tok},
		{"bracketed text alternative", ReceivedText{Text: "Verify email ( " + verify + " )"}, verify},
		{"trailing punctuation", ReceivedText{Text: "To confirm, visit " + verify + "."}, verify},
		{"short code after purpose", ReceivedText{Text: "Tap on this link to log in:\nhttps://t.me/login/48291"}, "https://t.me/login/48291"},
		{"image button without alt", ReceivedText{HTML: `<a href="` + verify + `"><img src="button.png"></a>`}, verify},
		{"URL says confirm", ReceivedText{HTML: `<a href="https://list.example/subscribe/confirm?u=` + tok + `">Yes, subscribe me</a>`}, "https://list.example/subscribe/confirm?u=" + tok},
		{"German", ReceivedText{HTML: `<a href="https://example.de/r?t=` + tok + `">Passwort zurücksetzen</a>`}, "https://example.de/r?t=" + tok},
		{"French", ReceivedText{HTML: `<a href="https://example.fr/r?t=` + tok + `">Réinitialiser mon mot de passe</a>`}, "https://example.fr/r?t=" + tok},
		{"Spanish", ReceivedText{HTML: `<a href="https://example.es/r?t=` + tok + `">Restablecer contraseña</a>`}, "https://example.es/r?t=" + tok},
		{"Portuguese generic label", ReceivedText{HTML: `<a href="https://example.br/c?token=` + tok + `">Clique aqui</a> para confirmar seu e-mail.`}, "https://example.br/c?token=" + tok},
		{"German click-here sentence", ReceivedText{HTML: `Bitte <a href="https://example.de/konto/bestaetigen?t=` + tok + `">klicken Sie hier</a>, um Ihre E-Mail-Adresse zu bestätigen.`}, "https://example.de/konto/bestaetigen?t=" + tok},
		{"finish signing up", ReceivedText{Text: "Um Ihre Registrierung abzuschließen, klicken Sie auf den folgenden Link:\n\nhttps://example.de/r/" + tok}, "https://example.de/r/" + tok},
		{"short code in a purposeful query", ReceivedText{HTML: `<a href="https://example.es/confirmar?c=8fK2mQ9x">Confirmar mi correo</a>`}, "https://example.es/confirmar?c=8fK2mQ9x"},
		{"short link asked for", ReceivedText{Text: "Acme: tap to sign in https://acme.example/l/Ab9Xz3Qw"}, "https://acme.example/l/Ab9Xz3Qw"},
		{"link carries the code", ReceivedText{Text: "Your code is 4829.\n\nOr open:\nhttps://app.example/verify?email=a%40b.example&code=4829"}, "https://app.example/verify?email=a%40b.example&code=4829"},
		{"Italian", ReceivedText{HTML: `<a href="https://example.it/a/` + tok + `">Clicca qui</a> per accedere al tuo account.`}, "https://example.it/a/" + tok},
		{"Dutch", ReceivedText{HTML: `<a href="https://example.nl/x/` + tok + `">Bevestig je e-mailadres</a>`}, "https://example.nl/x/" + tok},
		{"the better of two", ReceivedText{HTML: `<a href="https://example.com/home?id=` + tok + `">Open app</a> <a href="` + verify + `">Verify</a>`}, verify},
		{"sender's own site wins a tie", ReceivedText{From: "no-reply@mail.example.org", HTML: `<a href="https://other.example/confirm/` + tok + `">Confirm</a> <a href="https://example.org/confirm/` + tok + `">Confirm</a>`}, "https://example.org/confirm/" + tok},

		{"unsubscribe", ReceivedText{HTML: `<a href="https://example.com/unsubscribe?token=` + tok + `">Confirm unsubscribe</a>`}, ""},
		{"unsubscribe in the URL", ReceivedText{HTML: `<a href="https://example.com/u/unsubscribe/` + tok + `">Click here to confirm</a>`}, ""},
		{"stop receiving, click here", ReceivedText{HTML: `To stop receiving these emails, <a href="https://example.com/x?t=` + tok + `">click here</a>.`}, ""},
		{"no token", ReceivedText{HTML: `<a href="https://bank.example/login">Log in to view your statement</a>`}, ""},
		{"slug is no token", ReceivedText{HTML: `<a href="https://blog.example/2025-05-12-how-we-verify-our-release-builds">Verify</a>`}, ""},
		{"utm values are no token", ReceivedText{HTML: `<a href="https://shop.example/login?utm_campaign=Spring2025Sale01x">Sign in</a>`}, ""},
		{"encoded URL is no token", ReceivedText{HTML: `<a href="https://example.com/go?url=https%3A%2F%2Fexample.com%2Fa1b2c3d4e5">Confirm</a>`}, ""},
		{"label says nothing", ReceivedText{HTML: `<a href="https://example.com/trips/` + tok + `">View itinerary</a>`}, ""},
		{"if this wasn't you", ReceivedText{HTML: `<a href="https://example.com/reset?t=` + tok + `">If you didn't sign in, reset your password</a>`}, ""},
		{"image without alt", ReceivedText{HTML: `<a href="https://example.com/home/` + tok + `"><img src="logo.png"></a>`}, ""},
		{"tracking pixel", ReceivedText{HTML: `<p>Verify your email</p><img src="` + verify + `" width="1" height="1">`}, ""},
		{"mailto", ReceivedText{HTML: `<a href="mailto:verify@example.com?subject=` + tok + `">Verify</a>`}, ""},
		{"javascript", ReceivedText{HTML: `<a href="javascript:verify('` + tok + `')">Verify</a>`}, ""},
		{"in a comment", ReceivedText{HTML: `<!-- <a href="` + verify + `">Verify</a> -->`}, ""},
		{"in a script", ReceivedText{HTML: `<script>var a = '<a href="` + verify + `">Verify</a>';</script>`}, ""},
		{"short link not asked for", ReceivedText{Text: "Your parcel is on its way. Track it: https://post.example/t/Ab9Xz3Qw"}, ""},
		{"short link after a confirmed order", ReceivedText{Text: "Seu pedido 40219 foi confirmado! Acompanhe a entrega: https://loja.example/r/Xk82Lq9Z"}, ""},
		{"click here after an unrelated confirm", ReceivedText{HTML: `<p>Te confirmamos las fechas del festival. <a href="https://example.es/f/` + tok + `">Haz clic aquí</a> para ver el programa.</p>`}, ""},
		{"way out on the line", ReceivedText{Text: "If you didn't sign in, change your password right away. https://example.com/e?t=" + tok + "&ek=reset_password"}, ""},
		{"Dutch unsubscribe", ReceivedText{HTML: `<a href="https://example.nl/u?u=` + tok + `">Afmelden</a>`}, ""},
		{"short tracking label", ReceivedText{Text: "Sign in to see your order: https://shop.example/orders/2025Q1"}, ""},
		{"tracking link in text", ReceivedText{Text: "Track: https://tools.usps.com/go/TrackConfirmAction?tLabels=9400100000000000000000"}, ""},
	}, func(v *Verification) string { return v.Link })
}

func TestFindVerificationKind(t *testing.T) {
	link := "https://example.com/login/magic?token=Zx8pQ2vT9kLm4Rn7Ws3Yb6Hd"
	both := FindVerification(ReceivedText{Text: "Log in with this magic link: " + link + "\n\nOr enter this code: 715204"})
	if both == nil || *both != (Verification{Code: "715204", Link: link, Kind: VerificationBoth}) {
		t.Errorf("both: %+v", both)
	}
	// The link carries the code: both, not a code alone.
	inLink := FindVerification(ReceivedText{Text: "Your verification code is 4829.\nOr tap https://app.example/v/4829 to verify."})
	if inLink == nil || *inLink != (Verification{Code: "4829", Link: "https://app.example/v/4829", Kind: VerificationBoth}) {
		t.Errorf("code in the link: %+v", inLink)
	}
	code := FindVerification(ReceivedText{Text: "Your code is 715204"})
	if code == nil || *code != (Verification{Code: "715204", Kind: VerificationCode}) {
		t.Errorf("code: %+v", code)
	}
	only := FindVerification(ReceivedText{Text: "Sign in: " + link})
	if only == nil || *only != (Verification{Link: link, Kind: VerificationLink}) {
		t.Errorf("link: %+v", only)
	}
	if v := FindVerification(ReceivedText{Text: "Lunch at 12:30?"}); v != nil {
		t.Errorf("nothing: %+v", v)
	}
}

// The rule reads a bounded start of each body, so a huge body costs no more
// than its start; what lies past the bound is not seen.
func TestFindVerificationReadsOnlyTheStart(t *testing.T) {
	filler := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 2000) // ~116 KB
	if v := FindVerification(ReceivedText{Text: filler + "Your code is 482913"}); v != nil {
		t.Errorf("text past the bound: %+v", v)
	}
	if v := FindVerification(ReceivedText{Text: "Your code is 482913\n" + filler}); v == nil || v.Code != "482913" {
		t.Errorf("text before the bound: %+v", v)
	}
	html := "<p>" + strings.Repeat(filler, 3) + "</p><p>Your code is 482913</p>"
	if v := FindVerification(ReceivedText{HTML: html}); v != nil {
		t.Errorf("HTML past the bound: %+v", v)
	}
	// A cut in the middle of a character leaves valid text.
	if s := cutUTF8("aé", 2); s != "a" {
		t.Errorf("cutUTF8 = %q", s)
	}
}

// Hostile shapes finish, and find nothing they should not.
func TestFindVerificationHostileInput(t *testing.T) {
	for name, in := range map[string]ReceivedText{
		"unclosed tag":       {HTML: "<a href=\"" + strings.Repeat("x", 1<<20)},
		"unclosed comment":   {HTML: "<!--" + strings.Repeat("<a href=x>Verify</a>", 1<<15)},
		"unclosed script":    {HTML: "<script>" + strings.Repeat("</scrip", 1<<16)},
		"many open anchors":  {HTML: strings.Repeat(`<a href="https://example.com/verify?token=Zx8pQ2vT9kLm4Rn7">`, 1<<14)},
		"many less-thans":    {HTML: strings.Repeat("< ", 1<<19)},
		"one long word":      {Text: strings.Repeat("a-", 1<<19)},
		"many digit groups":  {Text: "code " + strings.Repeat("123 ", 1<<18)},
		"many single digits": {Text: "code " + strings.Repeat("1 ", 1<<19)},
		"many URLs":          {Text: strings.Repeat("https://", 1<<18)},
		"many scheme marks":  {Text: strings.Repeat("://", 1<<18)},
		"invalid UTF-8":      {Text: "code \xff\xfe 4829 \xc3", Subject: "\xe2\x82"},
	} {
		t.Run(name, func(t *testing.T) {
			FindVerification(in)
		})
	}
}

func TestReadHTML(t *testing.T) {
	doc := readHTML(`<!DOCTYPE html><html><head><title>T</title><style>p{color:red}</style></head>` +
		`<body><p>Hello&nbsp;<b>Ada</b></p><a href='https://x.example/?a=1&amp;b=2' class=btn>Go <img alt="now"></a>` +
		`<a name=anchor>plain</a><p>a < b</p></body></html>`)
	if want := "\n\nHello\u00a0Ada\nGo plain\na < b\n\n"; doc.text != want {
		t.Errorf("text %q, want %q", doc.text, want)
	}
	if len(doc.links) != 2 || doc.links[0].href != "https://x.example/?a=1&b=2" || doc.links[0].label != "Go now" ||
		doc.links[1].href != "" || doc.links[1].label != "plain" {
		t.Errorf("links %+v", doc.links)
	}
}

func TestFold(t *testing.T) {
	for in, want := range map[string]string{
		"Bestätigungscode": "bestatigungscode", "VÉRIFICATION": "verification", "Código": "codigo",
		"Verificação": "verificacao", "Straße": "strasse", "didn’t": "didn't", "plain": "plain",
		"ÀB\xffÇ ΣΑΣ": "ab\ufffdc σασ", "Ÿ\u00a0東京": "ÿ 東京",
	} {
		if got := fold(in); got != want {
			t.Errorf("fold(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzFindVerification(f *testing.F) {
	f.Add("Your code is 482 913", `<a href="https://example.com/verify?token=Zx8pQ2vT9kLm4Rn7">Verify</a>`)
	f.Add("G-482913 is your code\n@example.com #482913", "<p>code</p><td>4</td><td>8</td><td>2</td><td>9</td>")
	f.Fuzz(func(t *testing.T, text, html string) {
		v := FindVerification(ReceivedText{Subject: text, Text: text, HTML: html})
		if v == nil {
			return
		}
		if v.Kind != kindFor(v.Code, v.Link) {
			t.Fatalf("kind %q for %+v", v.Kind, v)
		}
		// A code is made of characters of the message, in order.
		if v.Code != "" && !isSubsequence(v.Code, text+html) {
			t.Fatalf("code %q is not in the message", v.Code)
		}
	})
}

func kindFor(code, link string) VerificationKind {
	switch {
	case code != "" && link != "":
		return VerificationBoth
	case code != "":
		return VerificationCode
	case link != "":
		return VerificationLink
	}
	return ""
}

func isSubsequence(sub, s string) bool {
	for i := 0; i < len(s) && sub != ""; i++ {
		if s[i] == sub[0] {
			sub = sub[1:]
		}
	}
	return sub == ""
}

func ExampleFindVerification() {
	v := FindVerification(ReceivedText{From: "+15005550006", Text: "Your WhatsApp code: 482-913\n\nDon't share this code with others"})
	fmt.Println(v.Code, v.Kind)
	// Output: 482-913 code
}
