// Package console is the web console for people, served at /console/: a
// driving adapter like the REST API, over the same app services, with no
// rule of its own. Pages are rendered on the server (html/template, with
// the templates, the style sheet and a little script embedded); every read
// and write works without JavaScript.
//
// Sign-in opens the same kind of session as the device verification page
// (app.Auth.SignIn): a cookie that is HttpOnly, SameSite=Lax, Secure on an
// https base URL, scoped to /console/ and good for 12 hours. Every form
// carries a CSRF token: the HMAC of a random per-browser cookie (signed
// double submit); a POST without the matching token is 403 and changes
// nothing.
package console

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Host is what the console borrows from the API that serves it: the
// buckets of wrong guesses per credential and client address, and the one
// mapping of errors to HTTP statuses.
type Host interface {
	// GuessAllowed and WrongGuess take what is being guessed: an email
	// address as typed, or the signed-in account's id.
	GuessAllowed(r *http.Request, credential string) error
	WrongGuess(r *http.Request, credential string)
	Status(err error) int
	// Closing is closed when the service begins to stop: open streams end.
	Closing() <-chan struct{}
	// StartExternalSignIn sends the browser to the OpenID Connect
	// provider; its callback gives the session to SignedIn.
	StartExternalSignIn(w http.ResponseWriter, r *http.Request) error
}

// Options configure the console.
type Options struct {
	Log *slog.Logger
	// BaseURL is the public address; an https one makes cookies Secure.
	BaseURL string
	// FormKey signs the CSRF tokens; nil means a random key, good until
	// the process ends.
	FormKey []byte
	Host    Host
	// MaxUploadBytes bounds a form with attachments (CALLSIGN_SMTP_MAX_BYTES).
	MaxUploadBytes int64
}

const (
	root          = "/console/"
	sessionCookie = "callsign_console_session"
	csrfCookie    = "callsign_console_csrf"
	// pageSize is the length of every paged list.
	pageSize = 50
	// unreadCap bounds the work of counting unread threads for a list of
	// identities: past it, the page says "99+".
	unreadCap = 100
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

type console struct {
	app       *app.App
	log       *slog.Logger
	host      Host
	formKey   []byte
	secure    bool
	maxUpload int64
	// pages are parsed at the first page served: 1.2 MB of parse trees
	// that a server nobody signs in to would keep live, and that every
	// collection of its heap would mark again.
	pages func() map[string]*template.Template
	mux   *http.ServeMux
}

// New builds the console's handler; it expects requests under /console/.
func New(a *app.App, opts Options) http.Handler {
	c := &console{app: a, log: opts.Log, host: opts.Host, formKey: opts.FormKey, maxUpload: opts.MaxUploadBytes,
		secure: strings.HasPrefix(opts.BaseURL, "https://"), mux: http.NewServeMux()}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if len(c.formKey) == 0 {
		c.formKey = []byte(rand.Text())
	}
	if c.maxUpload <= 0 {
		c.maxUpload = 25 << 20
	}
	c.pages = sync.OnceValue(parsePages)
	c.routes()
	return c
}

// parsePages gives each page the layout: one template set per page file.
func parsePages() map[string]*template.Template {
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html"))
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		panic(err)
	}
	pages := map[string]*template.Template{}
	for _, name := range names {
		page := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if page == "layout" {
			continue
		}
		pages[page] = template.Must(template.Must(layout.Clone()).ParseFS(templateFiles, name))
	}
	return pages
}

// pageHeaders keep the console's pages from being framed, cached or
// sniffed, and let them load only the console's own style sheet, script
// and message frames.
var pageHeaders = map[string]string{
	"Content-Security-Policy": pagePolicy + "; form-action 'self'",
	"X-Frame-Options":         "DENY",
	"Referrer-Policy":         "same-origin",
	"X-Content-Type-Options":  "nosniff",
	"Cache-Control":           "no-store",
}

// pagePolicy is every page's Content-Security-Policy but form-action,
// which the sign-in page leaves open: its provider button's answer is a
// redirect to the provider, which form-action would block.
const pagePolicy = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; " +
	"frame-src 'self'; frame-ancestors 'none'; base-uri 'none'"

func (c *console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, v := range pageHeaders {
		w.Header().Set(k, v)
	}
	c.mux.ServeHTTP(w, r)
}

// visit is one request from a person: who is signed in, and the token
// their forms carry.
type visit struct {
	w         http.ResponseWriter
	r         *http.Request
	account   core.Account // zero when signed out
	principal core.Principal
	csrf      string
	// csrfSecret is the browser's secret as it came with the request; ""
	// when it came without one (a fresh one is then set).
	csrfSecret string
}

func (v *visit) signedIn() bool { return v.account.ID != "" }

// principal is how the console acts for a signed-in person: with the
// rights of a management key of their account.
func sessionPrincipal(a core.Account) core.Principal {
	return core.Principal{AccountID: a.ID, KeyType: core.KeyManagement, KeyPrefix: "console", Origin: core.OriginConsole}
}

// begin reads the cookies every request starts from.
func (c *console) begin(w http.ResponseWriter, r *http.Request) *visit {
	v := &visit{w: w, r: r}
	if ck, err := r.Cookie(csrfCookie); err == nil && ck.Value != "" {
		v.csrfSecret = ck.Value
	} else {
		secret := rand.Text()
		c.setCookie(w, csrfCookie, secret, 0)
		v.csrf = c.mac(secret)
	}
	if v.csrf == "" {
		v.csrf = c.mac(v.csrfSecret)
	}
	if ck, err := r.Cookie(sessionCookie); err == nil && ck.Value != "" {
		acct, err := c.app.Auth.Session(r.Context(), ck.Value)
		switch {
		case err == nil:
			v.account, v.principal = acct, sessionPrincipal(acct)
		case core.KindOf(err) == core.KindUnauthorized:
			c.setCookie(w, sessionCookie, "", -1)
		default:
			c.log.Error("reading a console session failed", "err", err)
		}
	}
	return v
}

// mac is the form key's HMAC of a browser's CSRF secret.
func (c *console) mac(secret string) string {
	m := hmac.New(sha256.New, c.formKey)
	m.Write([]byte("console csrf\x00" + secret))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (c *console) setCookie(w http.ResponseWriter, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: root, MaxAge: maxAge,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
}

var errStaleForm = core.Forbidden("This form has expired or did not come from this console. Go back, reload the page and try again.")

// handler is a page or a form's action: it writes the answer, or returns
// an error for the error page.
type handler func(v *visit) error

// signedIn serves a handler to a signed-in person; others are sent to the
// sign-in page. A POST must carry the form's token, checked before the
// handler runs.
func (c *console) signedIn(h handler) http.HandlerFunc {
	return c.serve(h, true)
}

// open serves a handler to anyone (the sign-in page).
func (c *console) open(h handler) http.HandlerFunc {
	return c.serve(h, false)
}

func (c *console) serve(h handler, needSession bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := c.begin(w, r)
		if needSession && !v.signedIn() {
			target := root + "signin/"
			if r.Method == http.MethodGet && r.URL.Path != root {
				target += "?" + url.Values{"next": {r.URL.RequestURI()}}.Encode()
			}
			http.Redirect(w, r, target, http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost {
			if err := c.readForm(v); err != nil {
				c.fail(v, err)
				return
			}
			if v.csrfSecret == "" || !hmac.Equal([]byte(r.PostFormValue("csrf_token")), []byte(c.mac(v.csrfSecret))) {
				c.fail(v, errStaleForm)
				return
			}
		}
		if err := h(v); err != nil {
			c.fail(v, err)
		}
	}
}

// readForm reads a form's fields (and files), bounded by the upload limit.
func (c *console) readForm(v *visit) error {
	v.r.Body = http.MaxBytesReader(v.w, v.r.Body, c.maxUpload+1<<20)
	var err error
	if strings.HasPrefix(v.r.Header.Get("Content-Type"), "multipart/form-data") {
		err = v.r.ParseMultipartForm(8 << 20)
	} else {
		err = v.r.ParseForm()
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return core.TooLarge("The form is larger than the %d MB this service accepts.", c.maxUpload>>20)
	case err != nil:
		return core.Invalid("form", "The form could not be read.")
	}
	return nil
}

// view is what every page gets: its own data in Data.
type view struct {
	Title    string
	CSRF     string
	Account  string // the signed-in person's email
	Identity *core.Identity
	Section  string // the identity's tab: mail, texts, contacts, vault, phone
	Nav      string // the top navigation's current item
	Error    string
	Problems []string
	Notice   string
	Data     any
	// Pending is how many drafts await approval (the badge on Approvals),
	// counted up to unreadCap.
	Pending int
}

// render writes a page with the layout.
func (c *console) render(v *visit, status int, page string, pv view) {
	pv.CSRF, pv.Account = v.csrf, v.account.Email
	if v.signedIn() {
		pv.Pending = c.pendingApprovals(v)
	}
	t, ok := c.pages()[page]
	if !ok {
		panic("console: no page " + page)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", pv); err != nil {
		c.log.Error("rendering a console page failed", "page", page, "err", err)
		http.Error(v.w, "A server error occurred.", http.StatusInternalServerError)
		return
	}
	v.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	v.w.WriteHeader(status)
	_, _ = v.w.Write(buf.Bytes())
}

// pendingApprovals counts the drafts that await approval, for the badge;
// a failure only loses the badge.
func (c *console) pendingApprovals(v *visit) int {
	awaiting := true
	_, n, err := c.app.Sending.Drafts(v.r.Context(), v.principal, "", &awaiting, ports.Page{Limit: 1, Count: true, CountUpTo: unreadCap})
	if err != nil {
		c.log.Warn("counting drafts awaiting approval failed", "err", err)
		return 0
	}
	return n
}

// withProblem puts an error from the app on a page that is shown again
// (a form with a mistake), and returns the status to answer with.
func (c *console) withProblem(v *visit, pv *view, err error) int {
	if err == nil {
		return http.StatusOK
	}
	var e *core.Error
	if !errors.As(err, &e) {
		c.log.Error("console request failed", "method", v.r.Method, "path", v.r.URL.Path, "err", err)
		pv.Error = "A server error occurred. Try again later."
		return http.StatusInternalServerError
	}
	pv.Error = e.Message
	if len(e.Fields) > 0 {
		pv.Error = "Check the form:"
		for _, field := range slices.Sorted(maps.Keys(e.Fields)) {
			for _, m := range e.Fields[field] {
				if field == core.NonFieldErrors {
					pv.Problems = append(pv.Problems, m)
				} else {
					pv.Problems = append(pv.Problems, fieldLabel(field)+": "+m)
				}
			}
		}
	}
	if e.Kind == core.KindRateLimited && e.RetryAfterSeconds > 0 {
		v.w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfterSeconds))
	}
	return c.host.Status(err)
}

// fieldLabel names an API field as its form labels it.
func fieldLabel(field string) string {
	return strings.ToUpper(field[:1]) + strings.ReplaceAll(field[1:], "_", " ")
}

// fail shows the error page.
func (c *console) fail(v *visit, err error) {
	pv := view{Title: "Something went wrong"}
	status := c.withProblem(v, &pv, err)
	if status == http.StatusNotFound {
		pv.Title = "Not found"
	}
	c.render(v, status, "error", pv)
}

// redirect ends a successful form with a redirect to a page (Post/Redirect/Get).
func redirect(v *visit, path string) error {
	http.Redirect(v.w, v.r, path, http.StatusSeeOther)
	return nil
}

// pathUUID reads a uuid from the path; anything else is not found.
func pathUUID(v *visit, name, what string) (string, error) {
	u, err := uuid.Parse(v.r.PathValue(name))
	if err != nil {
		return "", core.NotFound("%s not found.", what)
	}
	return u.String(), nil
}

// pathID reads a positive integer from the path; anything else is not found.
func pathID(v *visit, name, what string) (int64, error) {
	n, err := strconv.ParseInt(v.r.PathValue(name), 10, 64)
	if err != nil || n <= 0 {
		return 0, core.NotFound("%s not found.", what)
	}
	return n, nil
}

// pageNumber reads ?page=, from 1.
func pageNumber(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 || n > 1_000_000 {
		return 1
	}
	return n
}

// pager is a paged list's links.
type pager struct {
	Page, Pages int    // 0 when not known
	Prev, Next  string // addresses; "" when there is none
	First       bool   // Prev goes back to the first page
}

// newPager makes the links of page n of total items, keeping the query.
func newPager(r *http.Request, n, total int) pager {
	p := pager{Page: n, Pages: max(1, (total+pageSize-1)/pageSize)}
	link := func(to int) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(to))
		return r.URL.Path + "?" + q.Encode()
	}
	if n > 1 {
		p.Prev = link(min(n-1, p.Pages))
	}
	if n < p.Pages {
		p.Next = link(n + 1)
	}
	return p
}

// openPager makes the links of page n of a list whose length is not
// counted: more says whether a next page exists.
func openPager(r *http.Request, n int, more bool) pager {
	p := newPager(r, n, 0)
	p.Pages, p.Next = 0, ""
	if n > 1 {
		p.Prev = newPager(r, n, n*pageSize).Prev
	}
	if more {
		p.Next = newPager(r, n, (n+1)*pageSize).Next
	}
	return p
}

// formValue is a trimmed form field.
func formValue(v *visit, name string) string { return strings.TrimSpace(v.r.PostFormValue(name)) }

// optional is a form field as the app's inputs take it: nil when empty.
func optional(v *visit, name string) *string {
	if s := formValue(v, name); s != "" {
		return &s
	}
	return nil
}

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2 Jan 2006 15:04 UTC")
	},
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"size": func(n int64) string {
		switch {
		case n >= 1<<20:
			return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MB"
		case n >= 1<<10:
			return strconv.FormatInt(n>>10, 10) + " KB"
		}
		return strconv.FormatInt(n, 10) + " bytes"
	},
	"join":   strings.Join,
	"unread": unreadLabel,
	"revoke": keyRevokePath,
	// dict passes several values to a shared template.
	"dict": func(pairs ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(pairs); i += 2 {
			m[pairs[i].(string)] = pairs[i+1]
		}
		return m
	},
}

// unreadLabel shows a bounded count of unread threads.
func unreadLabel(n int) string {
	if n >= unreadCap {
		return strconv.Itoa(unreadCap-1) + "+"
	}
	return strconv.Itoa(n)
}
