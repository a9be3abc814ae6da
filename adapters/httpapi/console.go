package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/core"
)

// ConsolePath is where the web console is served, when there is one.
const ConsolePath = "/console/"

// ConsoleHost is what the API lends the web console it serves: the buckets
// of wrong guesses per client address, which the console's sign-in and
// reveals share with the API's sign-in routes, and the one mapping of
// errors to statuses.
type ConsoleHost struct{ s *server }

type clientAddressKey struct{}

// clientAddress is the client's address as the API's trusted proxies
// tell it, which mountConsole put in the request's context.
func clientAddress(r *http.Request) string {
	addr, _ := r.Context().Value(clientAddressKey{}).(string)
	return addr
}

// GuessAllowed refuses (429) a check of credential (an email address as
// typed, or an account's id) from a client that has made too many wrong
// guesses of it, or of anything, lately.
func (h ConsoleHost) GuessAllowed(r *http.Request, credential string) error {
	return h.s.limits.guessAllowed(clientAddress(r), credential)
}

// WrongGuess counts a wrong password of credential against the request's client.
func (h ConsoleHost) WrongGuess(r *http.Request, credential string) {
	h.s.limits.wrongGuess(clientAddress(r), credential)
}

// Status is the HTTP status of an error the app returned: 500 for one
// that is not a *core.Error.
func (h ConsoleHost) Status(err error) int {
	var e *core.Error
	if errors.As(err, &e) {
		return statusOf(e.Kind)
	}
	return http.StatusInternalServerError
}

// Closing is closed when the service begins to stop, as the API's own
// event streams hear it.
func (h ConsoleHost) Closing() <-chan struct{} { return h.s.closing }

// ConsoleSignIn is the part of the console the API's provider callback
// hands a new session to, when the sign-in started on the console.
type ConsoleSignIn interface {
	SignedIn(w http.ResponseWriter, r *http.Request, session string)
}

// StartExternalSignIn sends the browser to the OpenID Connect provider;
// the provider comes back to the API's callback (the one redirect URL the
// provider knows), which gives the session to the console's SignedIn.
func (h ConsoleHost) StartExternalSignIn(w http.ResponseWriter, r *http.Request) error {
	var failed error
	h.s.startProviderSignIn(w, r, signInState{Console: true}, func(err error) { failed = err })
	return failed
}

// mountConsole serves the console under ConsolePath, with the client's
// address in each request's context.
func (s *server) mountConsole(e *gin.Engine, console http.Handler) {
	s.console, _ = console.(ConsoleSignIn)
	s.hasConsole = true
	serve := func(c *gin.Context) {
		ctx := context.WithValue(c.Request.Context(), clientAddressKey{}, c.ClientIP())
		console.ServeHTTP(c.Writer, c.Request.WithContext(ctx))
	}
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost} {
		e.Handle(method, ConsolePath+"*page", serve)
	}
	e.GET(ConsolePath[:len(ConsolePath)-1], func(c *gin.Context) { c.Redirect(http.StatusMovedPermanently, ConsolePath) })
}
