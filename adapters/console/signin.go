package console

import (
	"net/http"
	"strings"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

var errNoPage = core.NotFound("There is no such page in the console.")

type signInData struct {
	Email    string
	Next     string
	Provider string // the OpenID Connect provider's name; "" without one
}

// safeNext keeps a sign-in's return address inside the console.
func safeNext(next string) string {
	if !strings.HasPrefix(next, root) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return root
	}
	return next
}

func (c *console) signInPage(v *visit) error {
	next := safeNext(v.r.URL.Query().Get("next"))
	if v.signedIn() {
		return redirect(v, next)
	}
	v.w.Header().Set("Content-Security-Policy", pagePolicy)
	c.render(v, http.StatusOK, "signin", view{Title: "Sign in", Data: signInData{Next: next, Provider: c.app.Auth.ExternalProvider()}})
	return nil
}

// signIn checks the account's password. Wrong passwords count against the
// email and the client's address in the API's buckets: past them, 429
// until they refill.
func (c *console) signIn(v *visit) error {
	data := signInData{Email: formValue(v, "email"), Next: safeNext(v.r.PostFormValue("next")), Provider: c.app.Auth.ExternalProvider()}
	pv := view{Title: "Sign in", Data: data}
	v.w.Header().Set("Content-Security-Policy", pagePolicy)
	if err := c.host.GuessAllowed(v.r, data.Email); err != nil {
		c.render(v, c.withProblem(v, &pv, err), "signin", pv)
		return nil
	}
	session, err := c.app.Auth.SignIn(v.r.Context(), data.Email, v.r.PostFormValue("password"))
	if core.KindOf(err) == core.KindUnauthorized {
		c.host.WrongGuess(v.r, data.Email)
		pv.Error = "Wrong email or password."
		c.render(v, http.StatusUnauthorized, "signin", pv)
		return nil
	}
	if err != nil {
		return err
	}
	c.setCookie(v.w, sessionCookie, session, int(app.SessionLifetime.Seconds()))
	return redirect(v, data.Next)
}

// signInWithProvider starts a sign-in at the OpenID Connect provider.
func (c *console) signInWithProvider(v *visit) error {
	if c.app.Auth.ExternalProvider() == "" {
		return app.ErrNoExternalSignIn
	}
	return c.host.StartExternalSignIn(v.w, v.r)
}

// SignedIn is where the API's provider callback hands over the session of
// a sign-in that started here (httpapi.ConsoleSignIn).
func (c *console) SignedIn(w http.ResponseWriter, r *http.Request, session string) {
	c.setCookie(w, sessionCookie, session, int(app.SessionLifetime.Seconds()))
	http.Redirect(w, r, root, http.StatusSeeOther)
}

func (c *console) signOut(v *visit) error {
	c.setCookie(v.w, sessionCookie, "", -1)
	return redirect(v, root+"signin/")
}
