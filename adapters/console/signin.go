package console

import (
	"net/http"
	"strings"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

var errNoPage = core.NotFound("There is no such page in the console.")

type signInData struct {
	Email string
	Next  string
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
	c.render(v, http.StatusOK, "signin", view{Title: "Sign in", Data: signInData{Next: next}})
	return nil
}

// signIn checks the account's password. Wrong passwords count against the
// client's address in the API's buckets: past them, 429 until it refills.
func (c *console) signIn(v *visit) error {
	data := signInData{Email: formValue(v, "email"), Next: safeNext(v.r.PostFormValue("next"))}
	pv := view{Title: "Sign in", Data: data}
	if err := c.host.GuessAllowed(v.r); err != nil {
		c.render(v, c.withProblem(v, &pv, err), "signin", pv)
		return nil
	}
	session, err := c.app.Auth.SignIn(v.r.Context(), data.Email, v.r.PostFormValue("password"))
	if core.KindOf(err) == core.KindUnauthorized {
		c.host.WrongGuess(v.r)
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

func (c *console) signOut(v *visit) error {
	c.setCookie(v.w, sessionCookie, "", -1)
	return redirect(v, root+"signin/")
}
