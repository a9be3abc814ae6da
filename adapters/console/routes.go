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
	m.HandleFunc("POST /console/signin/provider/", c.open(c.signInWithProvider))
	m.HandleFunc("POST /console/signout/", c.open(c.signOut))

	m.HandleFunc("GET /console/{$}", c.signedIn(c.identitiesPage))
	m.HandleFunc("POST /console/identities/", c.signedIn(c.createIdentity))
	m.HandleFunc("GET /console/identities/{id}/delete/", c.signedIn(c.confirmDeleteIdentity))
	m.HandleFunc("POST /console/identities/{id}/delete/", c.signedIn(c.deleteIdentity))

	m.HandleFunc("GET /console/identities/{id}/mail/", c.signedIn(c.mailPage))
	m.HandleFunc("GET /console/identities/{id}/compose/", c.signedIn(c.composePage))
	m.HandleFunc("POST /console/identities/{id}/compose/", c.signedIn(c.compose))
	m.HandleFunc("GET /console/threads/{id}/", c.signedIn(c.threadPage))
	m.HandleFunc("GET /console/messages/{id}/{$}", c.signedIn(c.messagePage))
	m.HandleFunc("GET /console/messages/{id}/body/", c.signedIn(c.messageBody))
	m.HandleFunc("POST /console/messages/{id}/read/", c.signedIn(c.markRead))
	m.HandleFunc("GET /console/messages/{id}/respond/", c.signedIn(c.respondPage))
	m.HandleFunc("POST /console/messages/{id}/respond/", c.signedIn(c.respond))
	m.HandleFunc("GET /console/attachments/{id}/", c.signedIn(c.attachment))

	m.HandleFunc("GET /console/identities/{id}/texts/", c.signedIn(c.textsPage))
	m.HandleFunc("POST /console/identities/{id}/texts/", c.signedIn(c.sendText))
	m.HandleFunc("GET /console/conversations/{id}/", c.signedIn(c.conversationPage))
	m.HandleFunc("POST /console/conversations/{id}/read/", c.signedIn(c.markConversationRead))
	m.HandleFunc("GET /console/identities/{id}/phone/", c.signedIn(c.phonePage))
	m.HandleFunc("POST /console/identities/{id}/phone/", c.signedIn(c.provisionPhone))
	m.HandleFunc("POST /console/identities/{id}/voice/", c.signedIn(c.setVoiceAgent))

	m.HandleFunc("GET /console/identities/{id}/contacts/", c.signedIn(c.contactsPage))
	m.HandleFunc("POST /console/identities/{id}/contacts/", c.signedIn(c.createContact))
	m.HandleFunc("GET /console/contacts/{id}/", c.signedIn(c.contactPage))
	m.HandleFunc("POST /console/contacts/{id}/", c.signedIn(c.updateContact))
	m.HandleFunc("POST /console/contacts/{id}/delete/", c.signedIn(c.deleteContact))

	m.HandleFunc("GET /console/identities/{id}/vault/", c.signedIn(c.vaultPage))
	m.HandleFunc("POST /console/identities/{id}/passwords/", c.signedIn(c.createPassword))
	m.HandleFunc("POST /console/identities/{id}/secrets/", c.signedIn(c.createSecret))
	for _, kind := range []string{"password", "secret"} {
		m.HandleFunc("GET /console/"+kind+"s/{id}/reveal/", c.signedIn(c.revealPage(kind)))
		m.HandleFunc("POST /console/"+kind+"s/{id}/reveal/", c.signedIn(c.reveal(kind)))
		m.HandleFunc("POST /console/"+kind+"s/{id}/delete/", c.signedIn(c.deleteVaultEntry(kind)))
	}

	m.HandleFunc("GET /console/keys/", c.signedIn(c.keysPage))
	m.HandleFunc("POST /console/keys/", c.signedIn(c.createKey))
	m.HandleFunc("POST /console/keys/{type}/{id}/revoke/", c.signedIn(c.revokeKey))

	m.HandleFunc("GET /console/domains/", c.signedIn(c.domainsPage))
	m.HandleFunc("POST /console/domains/", c.signedIn(c.createDomain))
	m.HandleFunc("GET /console/domains/{name}/", c.signedIn(c.domainPage))
	m.HandleFunc("POST /console/domains/{name}/verify/", c.signedIn(c.verifyDomain))
	m.HandleFunc("POST /console/domains/{name}/delete/", c.signedIn(c.deleteDomain))

	m.HandleFunc("GET /console/approvals/", c.signedIn(c.approvalsPage))
	m.HandleFunc("POST /console/drafts/{id}/send/", c.signedIn(c.approveDraft))
	m.HandleFunc("POST /console/drafts/{id}/delete/", c.signedIn(c.discardDraft))

	m.HandleFunc("GET /console/events/", c.signedIn(c.eventsPage))
	m.HandleFunc("GET /console/webhooks/", c.signedIn(c.webhooksPage))
	m.HandleFunc("POST /console/webhooks/", c.signedIn(c.createWebhook))
	m.HandleFunc("GET /console/webhooks/{id}/", c.signedIn(c.webhookPage))
	m.HandleFunc("POST /console/webhooks/{id}/test/", c.signedIn(c.testWebhook))
	m.HandleFunc("POST /console/webhooks/{id}/enabled/", c.signedIn(c.enableWebhook))
	m.HandleFunc("POST /console/webhooks/{id}/rotate-secret/", c.signedIn(c.rotateWebhookSecret))
	m.HandleFunc("POST /console/webhooks/{id}/deliveries/{delivery}/retry/", c.signedIn(c.retryDelivery))
	m.HandleFunc("POST /console/webhooks/{id}/delete/", c.signedIn(c.deleteWebhook))

	m.HandleFunc("GET /console/pulse/", c.signedIn(c.pulse))
	m.HandleFunc("GET /console/stream/", c.signedIn(c.stream))

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
