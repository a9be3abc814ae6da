package console

import (
	"io/fs"
	"net/http"
)

// routes: every page is reachable by links from /console/.
func (c *console) routes() {
	m := c.mux
	static, _ := fs.Sub(staticFiles, "static")
	m.Handle("GET /console/static/", http.StripPrefix("/console/static/", staticHandler(static)))

	m.HandleFunc("GET /console/signin/", c.open(c.signInPage))
	m.HandleFunc("POST /console/signin/", c.open(c.signIn))
	m.HandleFunc("POST /console/signout/", c.open(c.signOut))

	m.HandleFunc("GET /console/{$}", c.signedIn(c.identitiesPage))
	m.HandleFunc("POST /console/identities/", c.signedIn(c.createIdentity))
	m.HandleFunc("GET /console/identities/{id}/delete/", c.signedIn(c.confirmDeleteIdentity))
	m.HandleFunc("POST /console/identities/{id}/delete/", c.signedIn(c.deleteIdentity))

	m.HandleFunc("GET /console/identities/{id}/mail/", c.signedIn(c.mailPage))
	m.HandleFunc("GET /console/identities/{id}/compose/", c.signedIn(c.composePage))
	m.HandleFunc("POST /console/identities/{id}/compose/", c.signedIn(c.compose))
	m.HandleFunc("GET /console/threads/{id}/", c.signedIn(c.threadPage))
	m.HandleFunc("GET /console/messages/{id}/body/", c.signedIn(c.messageBody))
	m.HandleFunc("POST /console/messages/{id}/read/", c.signedIn(c.markRead))
	m.HandleFunc("GET /console/messages/{id}/respond/", c.signedIn(c.respondPage))
	m.HandleFunc("POST /console/messages/{id}/respond/", c.signedIn(c.respond))
	m.HandleFunc("GET /console/attachments/{id}/", c.signedIn(c.attachment))

	m.HandleFunc("GET /console/pulse/", c.signedIn(c.pulse))

	m.HandleFunc("/console/", c.open(func(*visit) error { return errNoPage }))
}

// staticHandler serves the embedded style sheet and script; they change
// only with the binary, so browsers may keep them for an hour.
func staticHandler(files fs.FS) http.Handler {
	fileServer := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fileServer.ServeHTTP(w, r)
	})
}
