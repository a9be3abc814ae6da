package httpapi

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// The verification page (spec §5.6): server-rendered, no JavaScript.
//
// Cookies, all HttpOnly, SameSite=Lax, Secure on an https base URL, and
// scoped to /api/auth/device/:
//   - callsign_csrf: a random value for this browser. Every form carries
//     the HMAC of it under the form key; a POST whose token does not match
//     the cookie it came with is refused (signed double submit). SameSite
//     already keeps the cookie off cross-site POSTs.
//   - callsign_session: a session token (12 hours) once signed in.
//   - callsign_signin: while a sign-in through the provider is under way,
//     its state, nonce and PKCE verifier, signed with the form key.
//
//go:embed verify.html
var verifyHTML string

var verifyTemplate = template.Must(template.New("verify").Parse(verifyHTML))

const (
	csrfCookie    = "callsign_csrf"
	sessionCookie = "callsign_session"
	signInCookie  = "callsign_signin"
	// signInLifetime bounds a round trip through the provider.
	signInLifetime = 10 * time.Minute
	// maxTypedCode bounds what the page echoes back of a typed code.
	maxTypedCode = 20
)

// verifyView is what the page shows; Step picks the part.
type verifyView struct {
	Step       string // signin, code, approve, done, or a problem
	Title      string
	Error      string
	Action     string
	CSRF       string
	UserCode   string
	Email      string // the address typed into the sign-in form
	Provider   string
	SignedInAs string
	ClientName string
	// RequestedAt and RequestedFrom say when and from which address the
	// device asked, so the person can tell whether it was theirs.
	RequestedAt   time.Time
	RequestedFrom string
	Identities    []identityView
	Chosen        string // the radio button checked: an identity's id, "new" or "management"
	NewName       string
	Approved      bool
}

// visit is one request to the page: the browser's CSRF secret (as it came
// with the request) and who is signed in.
type visit struct {
	view       verifyView
	csrfSecret string
	account    *core.Account
}

// begin reads the cookies every request to the page starts from.
func (s *server) begin(c *gin.Context) *visit {
	v := &visit{view: verifyView{Action: verifyPath, Provider: s.app.Auth.ExternalProvider()}}
	secret, err := c.Cookie(csrfCookie)
	if err != nil || secret == "" {
		secret = rand.Text()
		s.setCookie(c, csrfCookie, secret, devicePath, 0)
	} else {
		v.csrfSecret = secret
	}
	v.view.CSRF = s.mac(csrfCookie, secret)
	if token, err := c.Cookie(sessionCookie); err == nil && token != "" {
		acct, err := s.app.Auth.Session(c.Request.Context(), token)
		switch {
		case err == nil:
			v.account, v.view.SignedInAs = &acct, acct.Email
		case core.KindOf(err) == core.KindUnauthorized:
			s.clearCookie(c, sessionCookie, devicePath)
		default:
			s.log.Error("reading a session failed", "err", err)
		}
	}
	return v
}

// csrfValid checks a form's token against the cookie sent with it.
func (s *server) csrfValid(v *visit, token string) bool {
	return v.csrfSecret != "" && hmac.Equal([]byte(token), []byte(s.mac(csrfCookie, v.csrfSecret)))
}

// verifyPage shows the step the visitor is at: sign in, type the code, or
// review the request.
func (s *server) verifyPage(c *gin.Context) {
	v, typed := s.begin(c), c.Query("user_code")
	v.view.UserCode = displayCode(typed)
	switch {
	case v.account == nil:
		v.view.Step, v.view.Title = "signin", "Sign in"
		s.render(c, http.StatusOK, v.view)
	case strings.TrimSpace(typed) == "":
		v.view.Step, v.view.Title = "code", "Enter the code"
		s.render(c, http.StatusOK, v.view)
	default:
		s.showApproval(c, v, typed, "", http.StatusOK)
	}
}

// showApproval shows the request of a typed code, or asks for the code
// again when it is wrong (which counts as a wrong guess).
func (s *server) showApproval(c *gin.Context, v *visit, typed, problem string, status int) {
	if err := s.guessAllowed(c, v.account.ID); err != nil {
		s.failPage(c, err)
		return
	}
	ctx := c.Request.Context()
	g, err := s.app.Device.Pending(ctx, typed)
	if core.KindOf(err) == core.KindNotFound {
		s.wrongGuess(c, v.account.ID)
		v.view.Step, v.view.Title, v.view.Error = "code", "Enter the code", err.Error()
		s.render(c, http.StatusBadRequest, v.view)
		return
	}
	if err != nil {
		s.failPage(c, err)
		return
	}
	identities, err := s.app.Device.Identities(ctx, v.account.ID)
	if err != nil {
		s.failPage(c, err)
		return
	}
	v.view.Step, v.view.Title, v.view.Error = "approve", "Connect a device", problem
	v.view.UserCode, v.view.ClientName = core.FormatUserCode(g.UserCode), g.ClientName
	v.view.RequestedAt, v.view.RequestedFrom = g.CreatedAt.UTC(), g.RequestedFrom
	v.view.Identities = viewAll(identities, viewIdentity)
	if v.view.Chosen == "" {
		switch suggested := app.Suggest(g, identities); {
		case suggested.Management:
			v.view.Chosen = chooseManagement
		case suggested.IdentityID != "":
			v.view.Chosen = suggested.IdentityID
		default:
			v.view.Chosen, v.view.NewName = chooseNew, *suggested.NewName
		}
	}
	s.render(c, status, v.view)
}

// The page's radio values besides an identity's id.
const (
	chooseNew        = "new"
	chooseManagement = "management"
)

var errStaleForm = core.Forbidden("This form has expired or did not come from this page. Go back, reload the page and try again.")

// verifySubmit handles the page's forms; `action` says which.
func (s *server) verifySubmit(c *gin.Context) {
	v := s.begin(c)
	in, err := readOpenInput(c)
	if err != nil {
		s.failPage(c, err)
		return
	}
	if !s.csrfValid(v, in.text("csrf_token")) {
		s.failPage(c, errStaleForm)
		return
	}
	typed := in.text("user_code")
	switch action := in.text("action"); action {
	case "signin":
		s.signInWithPassword(c, v, in, typed)
	case "oidc":
		s.signInWithProvider(c, typed)
	case "signout":
		s.clearCookie(c, sessionCookie, devicePath)
		s.backToPage(c, typed)
	case "approve", "deny":
		s.answer(c, v, in, typed, action == "approve")
	default:
		s.failPage(c, core.Invalid("action", "Unknown action %q.", action))
	}
}

func (s *server) signInWithPassword(c *gin.Context, v *visit, in *input, typed string) {
	email := in.text("email")
	if err := s.guessAllowed(c, email); err != nil {
		s.failPage(c, err)
		return
	}
	session, err := s.app.Auth.SignIn(c.Request.Context(), email, in.text("password"))
	if core.KindOf(err) == core.KindUnauthorized {
		s.wrongGuess(c, email)
		v.view.Step, v.view.Title, v.view.Error = "signin", "Sign in", "Wrong email or password."
		v.view.UserCode, v.view.Email = displayCode(typed), email
		s.render(c, http.StatusUnauthorized, v.view)
		return
	}
	if err != nil {
		s.failPage(c, err)
		return
	}
	s.setCookie(c, sessionCookie, session, devicePath, int(app.SessionLifetime.Seconds()))
	s.backToPage(c, typed)
}

// answer approves or denies the request of the typed code.
func (s *server) answer(c *gin.Context, v *visit, in *input, typed string, approve bool) {
	if v.account == nil {
		v.view.Step, v.view.Title, v.view.Error, v.view.UserCode = "signin", "Sign in", "Sign in first.", displayCode(typed)
		s.render(c, http.StatusUnauthorized, v.view)
		return
	}
	if err := s.guessAllowed(c, v.account.ID); err != nil {
		s.failPage(c, err)
		return
	}
	ctx := c.Request.Context()
	var err error
	if approve {
		var choice app.DeviceChoice
		v.view.Chosen, v.view.NewName = in.text("identity"), in.text("identity_name")
		switch v.view.Chosen {
		case chooseManagement:
			choice.Management = true
		case chooseNew:
			choice.NewName = &v.view.NewName
		default:
			if choice.IdentityID = in.uuid("identity"); in.err() != nil {
				err = core.Invalid("identity", "Choose one of your identities.")
			}
		}
		if err == nil {
			_, err = s.app.Device.Approve(ctx, v.account.ID, typed, choice)
		}
	} else {
		err = s.app.Device.Deny(ctx, v.account.ID, typed)
	}
	var e *core.Error
	switch {
	case err == nil:
		v.view.Step, v.view.Approved, v.view.Title = "done", approve, "Request denied"
		if approve {
			v.view.Title = "Device connected"
		}
		s.render(c, http.StatusOK, v.view)
	case core.KindOf(err) == core.KindNotFound:
		s.wrongGuess(c, v.account.ID)
		v.view.Step, v.view.Title, v.view.Error, v.view.UserCode = "code", "Enter the code", err.Error(), displayCode(typed)
		s.render(c, http.StatusBadRequest, v.view)
	case errors.As(err, &e) && len(e.Fields) > 0:
		// The identity choice was wrong (a bad or taken name): choose again.
		s.showApproval(c, v, typed, e.Message, statusOf(e.Kind))
	default:
		s.failPage(c, err)
	}
}

// signInState is what the provider round trip carries in its cookie.
type signInState struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	UserCode string `json:"c"`
	Expires  int64  `json:"e"`
	// Console: the sign-in started on the console, which gets the session.
	Console bool `json:"k,omitempty"`
}

func (s *server) signInWithProvider(c *gin.Context, typed string) {
	s.startProviderSignIn(c.Writer, c.Request, signInState{UserCode: displayCode(typed)}, func(err error) { s.failPage(c, err) })
}

// startProviderSignIn sends the browser to the provider, with the round
// trip's state in a signed cookie for the callback.
func (s *server) startProviderSignIn(w http.ResponseWriter, r *http.Request, st signInState, fail func(error)) {
	for _, field := range []*string{&st.State, &st.Nonce, &st.Verifier} {
		token, err := core.RandomToken(rand.Reader, 32) // 43 characters, as PKCE wants
		if err != nil {
			fail(err)
			return
		}
		*field = token
	}
	authURL, err := s.app.Auth.ExternalSignInURL(r.Context(), st.State, st.Nonce, st.Verifier)
	if err != nil {
		fail(err)
		return
	}
	st.Expires = s.now().Add(signInLifetime).Unix()
	data, _ := json.Marshal(st)
	value := base64.RawURLEncoding.EncodeToString(data)
	s.writeCookie(w, signInCookie, value+"."+s.mac(signInCookie, value), callbackPath, int(signInLifetime.Seconds()))
	http.Redirect(w, r, authURL, http.StatusSeeOther)
}

// externalCallback is where the provider sends the browser back.
func (s *server) externalCallback(c *gin.Context) {
	provider := s.app.Auth.ExternalProvider()
	if provider == "" {
		s.fail(c, app.ErrNoExternalSignIn)
		return
	}
	st, ok := s.signInState(c)
	s.clearCookie(c, signInCookie, callbackPath)
	if !ok || !hmac.Equal([]byte(c.Query("state")), []byte(st.State)) {
		s.failPage(c, &core.Error{Kind: core.KindInvalid, Message: "This sign-in did not start on this page, or took too long. Start again."})
		return
	}
	if c.Query("error") != "" {
		s.failPage(c, core.Unauthorized("The sign-in at %s was cancelled. Start again, or sign in with your password.", provider))
		return
	}
	session, err := s.app.Auth.ExternalSignIn(c.Request.Context(), c.Query("code"), st.Nonce, st.Verifier)
	if err != nil {
		s.failPage(c, err)
		return
	}
	if st.Console && s.console != nil {
		s.console.SignedIn(c.Writer, c.Request, session)
		return
	}
	s.setCookie(c, sessionCookie, session, devicePath, int(app.SessionLifetime.Seconds()))
	s.backToPage(c, st.UserCode)
}

// signInState reads the provider round trip's cookie, if it is ours and fresh.
func (s *server) signInState(c *gin.Context) (signInState, bool) {
	var st signInState
	raw, err := c.Cookie(signInCookie)
	value, mac, found := strings.Cut(raw, ".")
	if err != nil || !found || !hmac.Equal([]byte(mac), []byte(s.mac(signInCookie, value))) {
		return st, false
	}
	data, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || json.Unmarshal(data, &st) != nil || s.now().Unix() > st.Expires {
		return st, false
	}
	return st, true
}

// backToPage sends the browser to the page for the code (Post/Redirect/Get).
func (s *server) backToPage(c *gin.Context, typed string) {
	location := verifyPath
	if code := displayCode(typed); code != "" {
		location += "?" + url.Values{"user_code": {code}}.Encode()
	}
	c.Redirect(http.StatusSeeOther, location)
}

// displayCode shows a typed code as XXXX-XXXX when it is one, else as typed.
func displayCode(typed string) string {
	if code, ok := core.NormalizeUserCode(typed); ok {
		return core.FormatUserCode(code)
	}
	typed = strings.TrimSpace(typed)
	if r := []rune(typed); len(r) > maxTypedCode {
		typed = string(r[:maxTypedCode])
	}
	return typed
}

// failPage is fail for the page: the same statuses, as HTML.
func (s *server) failPage(c *gin.Context, err error) {
	status, message := http.StatusInternalServerError, "A server error occurred. Try again later."
	var se *statusError
	var e *core.Error
	switch {
	case errors.As(err, &se):
		status, message = se.status, se.msg
	case errors.As(err, &e):
		status, message = statusOf(e.Kind), e.Message
		setErrorHeaders(c, e)
	default:
		s.log.Error("request failed", "method", c.Request.Method, "route", c.FullPath(), "err", err)
	}
	s.render(c, status, verifyView{Title: "Something went wrong", Error: message, Action: verifyPath})
	c.Abort()
}

// pageHeaders keep the page from being framed, cached, sniffed, or from
// loading anything but its own inline styles.
var pageHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
	"X-Frame-Options":         "DENY",
	"Referrer-Policy":         "no-referrer",
	"X-Content-Type-Options":  "nosniff",
}

func (s *server) render(c *gin.Context, status int, v verifyView) {
	var buf bytes.Buffer
	if err := verifyTemplate.Execute(&buf, v); err != nil {
		s.log.Error("rendering the verification page failed", "err", err)
		c.AbortWithStatus(http.StatusInternalServerError)
		return
	}
	for k, val := range pageHeaders {
		c.Header(k, val)
	}
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// mac is the form key's HMAC of value for one purpose: a MAC made for one
// use never passes for another.
func (s *server) mac(purpose, value string) string {
	m := hmac.New(sha256.New, s.formKey)
	m.Write([]byte(purpose + "\x00" + value))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *server) setCookie(c *gin.Context, name, value, path string, maxAge int) {
	s.writeCookie(c.Writer, name, value, path, maxAge)
}

func (s *server) writeCookie(w http.ResponseWriter, name, value, path string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, Secure: s.secureCookies, SameSite: http.SameSiteLaxMode})
}

func (s *server) clearCookie(c *gin.Context, name, path string) { s.setCookie(c, name, "", path, -1) }
