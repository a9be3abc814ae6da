// Package httpapi is the REST API of spec §4 over Gin: routing, request
// parsing, authentication, error shapes and the OpenAPI document. Handlers
// translate HTTP into calls on the app's services and nothing more.
package httpapi

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// Options configure the API.
type Options struct {
	Log *slog.Logger
	// BaseURL is the public address, for absolute URLs in responses.
	BaseURL string
	// MaxUploadBytes bounds an attachment upload (CALLSIGN_SMTP_MAX_BYTES).
	MaxUploadBytes int64
	// RateLimit is the bucket per key, and per client address on the
	// sign-in and device routes (CALLSIGN_RATE_LIMIT); zero turns it off.
	RateLimit RateLimit
	// TrustedProxies are the proxies (IPs or CIDRs) whose X-Forwarded-For
	// names the client; with none, the client is the peer address.
	TrustedProxies []string
	// FormKey signs the verification page's CSRF tokens and sign-in state;
	// nil means a random key, good until the process ends.
	FormKey []byte
	// Now tells the time to the rate limiter and the page; nil means time.Now.
	Now func() time.Time
	// Version is the build's version, shown at GET /.
	Version string
	// Requests hears every request, for metrics; nil for none.
	Requests RequestObserver
	// MCP, when set, builds the Model Context Protocol endpoint served at
	// /mcp behind the API's authentication and per-key rate limit; it is
	// given the API's own handler to call in-process. nil: /mcp is 404.
	MCP func(api http.Handler) http.Handler
	// Console, when set, builds the web console served at ConsolePath;
	// it is given what the API lends it (console.go). nil: no console.
	Console func(host ConsoleHost) http.Handler
	// Streams cap the event streams and long polls open at once per key
	// and per account on this instance (CALLSIGN_MAX_STREAMS_PER_*).
	Streams StreamLimits
	// Telnyx, when set, checks Telnyx's webhook signatures; without it the
	// routes under /webhooks/telnyx/ answer 404 (CALLSIGN_TELEPHONY=telnyx).
	Telnyx TelnyxVerifier
	// Mailgun checks Mailgun's webhooks; nil: they are refused (403).
	Mailgun MailgunSignatures
	// SNS checks Amazon SNS messages (SES); nil: they are refused (403).
	SNS SNSMessages
	// Media bridges streamed calls' audio at /media/{token}/; nil answers
	// 503 there.
	Media MediaBridge
	// Closing, once closed, ends the event streams (the service closes it
	// when it shuts down: a stream would otherwise hold the drain).
	Closing <-chan struct{}
}

// RequestObserver hears every request, once answered. route is the
// route's pattern ("(unmatched)" for none), so its values stay few.
type RequestObserver interface {
	Request(method, route string, status int, took time.Duration)
}

type server struct {
	app           *app.App
	log           *slog.Logger
	baseURL       string
	maxUpload     int64
	limits        limits
	streams       *streamSlots
	formKey       []byte
	secureCookies bool
	now           func() time.Time
	version       string
	requests      RequestObserver
	table         *routeTable
	openAPI       servedSchema
	closing       <-chan struct{}
	mediaBridge   MediaBridge
	console       ConsoleSignIn  // nil without a console
	hasConsole    bool           // the console is served at ConsolePath
	telnyx        TelnyxVerifier // nil without Telnyx
	mailgun       MailgunSignatures
	sns           SNSMessages
}

func init() { gin.SetMode(gin.ReleaseMode) }

// New builds the API's handler.
func New(a *app.App, opts Options) http.Handler {
	s := &server{app: a, log: opts.Log, baseURL: strings.TrimSuffix(opts.BaseURL, "/"), maxUpload: opts.MaxUploadBytes, version: opts.Version, requests: opts.Requests,
		closing: opts.Closing, mediaBridge: opts.Media, telnyx: opts.Telnyx, mailgun: opts.Mailgun, sns: opts.SNS}
	if s.maxUpload <= 0 {
		s.maxUpload = 25 << 20
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now = opts.Now; s.now == nil {
		s.now = time.Now
	}
	s.limits = newLimits(opts.RateLimit, s.now)
	s.streams = newStreamSlots(opts.Streams)
	if s.formKey = opts.FormKey; len(s.formKey) == 0 {
		s.formKey = []byte(rand.Text())
	}
	s.secureCookies = strings.HasPrefix(s.baseURL, "https://")
	e := gin.New()
	if err := e.SetTrustedProxies(opts.TrustedProxies); err != nil {
		s.log.Error("ignoring the trusted proxies", "err", err)
		_ = e.SetTrustedProxies(nil)
	}
	// Wrong methods and missing trailing slashes are answered from the
	// route table (methods.go), which knows every route's methods.
	e.HandleMethodNotAllowed = false
	e.RedirectTrailingSlash = false
	e.ContextWithFallback = true
	e.Use(s.accessLog, gin.CustomRecoveryWithWriter(nil, s.recovered), s.checkMethod)
	e.NoRoute(s.noRoute)
	s.routes(e)
	if opts.MCP != nil {
		mcp := gin.WrapH(opts.MCP(e))
		for _, method := range []string{"GET", "POST", "DELETE"} {
			e.Handle(method, "/mcp", s.authenticate, s.throttleKey, mcp)
		}
	}
	if opts.Console != nil {
		s.mountConsole(e, opts.Console(ConsoleHost{s}))
	}
	s.table = newRouteTable(e.Routes())
	return e
}

// routes registers every route; the OpenAPI test walks the same table.
func (s *server) routes(e *gin.Engine) {
	e.GET("/", s.handle(s.index))
	e.GET(core.MTASTSPolicyPath, s.mtaSTSPolicy)
	api := e.Group("/api")
	api.GET("/health/ping/", s.handle(s.ping))
	api.GET("/health/ready/", s.handle(s.ready))
	api.GET("/schema/", s.schema)
	api.GET("/docs/", s.docs)
	s.signInRoutes(api)

	authed := api.Group("", s.authenticate, s.throttleKey)
	authed.GET("/health/whoami/", s.handle(s.whoami))

	keys := authed.Group("/auth/keys")
	keys.GET("/management/", s.handle(s.listKeys(core.KeyManagement)))
	keys.POST("/management/", s.handle(s.createKey(false, s.app.Auth.CreateManagementKey)))
	keys.GET("/management/:id/", s.handle(s.getKey(core.KeyManagement)))
	keys.DELETE("/management/:id/", s.handle(s.deleteKey(core.KeyManagement)))
	keys.GET("/identity/", s.handle(s.listKeys(core.KeyIdentity)))
	keys.POST("/identity/", s.handle(s.createKey(true, s.app.Auth.CreateIdentityKey)))
	keys.GET("/identity/:id/", s.handle(s.getKey(core.KeyIdentity)))
	keys.PATCH("/identity/:id/", s.handle(s.updateIdentityKey))
	keys.DELETE("/identity/:id/", s.handle(s.deleteKey(core.KeyIdentity)))

	authed.GET("/identities/", s.handle(s.listIdentities))
	authed.POST("/identities/", s.handle(s.idempotent(maxBodyBytes, s.recoverIdentity, s.createIdentity)))
	authed.GET("/identities/:uuid/", s.handle(s.getIdentity))
	authed.PUT("/identities/:uuid/", s.handle(s.updateIdentity(true)))
	authed.PATCH("/identities/:uuid/", s.handle(s.updateIdentity(false)))
	authed.DELETE("/identities/:uuid/", s.handle(s.deleteIdentity))

	authed.GET("/passwords/", s.handle(s.listPasswords))
	authed.POST("/passwords/", s.handle(s.idempotentVault(s.recoverPassword, s.createPassword)))
	authed.GET("/passwords/generate-password/", s.handle(s.generatePassword))
	authed.GET("/passwords/:uuid/", s.handle(s.getPassword))
	authed.GET("/passwords/:uuid/totp/", s.handle(s.passwordTOTP))
	authed.PUT("/passwords/:uuid/", s.handle(s.updatePassword(true)))
	authed.PATCH("/passwords/:uuid/", s.handle(s.updatePassword(false)))
	authed.DELETE("/passwords/:uuid/", s.handle(s.deletePassword))

	authed.GET("/secrets/", s.handle(s.listSecrets))
	authed.POST("/secrets/", s.handle(s.idempotentVault(s.recoverSecret, s.createSecret)))
	authed.GET("/secrets/:uuid/", s.handle(s.getSecret))
	authed.PUT("/secrets/:uuid/", s.handle(s.updateSecret(true)))
	authed.PATCH("/secrets/:uuid/", s.handle(s.updateSecret(false)))
	authed.DELETE("/secrets/:uuid/", s.handle(s.deleteSecret))

	authed.GET("/contacts/", s.handle(s.listContacts))
	authed.POST("/contacts/", s.handle(s.idempotent(maxBodyBytes, s.recoverContact, s.createContact)))
	authed.GET("/contacts/find/", s.handle(s.findContact))
	authed.GET("/contacts/search/", s.handle(s.searchContacts))
	authed.GET("/contacts/:uuid/", s.handle(s.getContact))
	authed.PATCH("/contacts/:uuid/", s.handle(s.updateContact))
	authed.DELETE("/contacts/:uuid/", s.handle(s.deleteContact))

	authed.GET("/domains/", s.handle(s.listDomains))
	authed.POST("/domains/", s.handle(s.createDomain))
	authed.GET("/domains/:name/", s.handle(s.domainAction(s.getDomain)))
	authed.PATCH("/domains/:name/", s.handle(s.domainAction(s.updateDomain)))
	authed.DELETE("/domains/:name/", s.handle(s.deleteDomain))
	authed.POST("/domains/:name/verify/", s.handle(bodiless(s.domainAction(s.verifyDomain))))
	authed.POST("/domains/:name/rotate-dkim/", s.handle(bodiless(s.domainAction(s.rotateDKIM))))
	authed.GET("/suppressions/", s.handle(s.listSuppressions))
	authed.DELETE("/suppressions/:email/", s.handle(s.deleteSuppression))
	authed.GET("/email/", s.handle(s.listInboxes))
	authed.POST("/email/", s.handle(s.idempotent(maxBodyBytes, s.recoverInbox, s.createInbox)))
	authed.GET("/email/check-availability/", s.handle(s.checkAvailability))
	authed.GET("/email/:id/", s.handle(s.getInbox))
	authed.DELETE("/email/:id/", s.handle(s.deleteInbox))
	authed.PUT("/email/:id/source/", s.handle(s.putSource))
	authed.GET("/email/:id/source/", s.handle(s.getSource))
	authed.DELETE("/email/:id/source/", s.handle(s.deleteSource))
	authed.GET("/email-inbox/", s.handle(s.listThreads))
	authed.GET("/email-inbox/:id/", s.handle(s.getThread))
	authed.GET("/email-messages/", s.handle(s.listMessages))
	authed.POST("/email-messages/compose/", s.handle(s.idempotent(maxBodyBytes, s.recoverMessage, s.compose)))
	authed.GET("/email-messages/:id/", s.handle(s.getMessage))
	authed.PUT("/email-messages/:id/", s.handle(updateReadFlag(true, s.app.Reading.Message, s.app.Reading.SetRead, s.viewMessage)))
	authed.PATCH("/email-messages/:id/", s.handle(updateReadFlag(false, s.app.Reading.Message, s.app.Reading.SetRead, s.viewMessage)))
	authed.DELETE("/email-messages/:id/", s.handle(s.deleteMessage))
	authed.GET("/email-messages/:id/raw/", s.pathBytes("Message", "message/rfc822", s.app.Reading.Raw))
	authed.PUT("/email-messages/:id/labels/:label/", s.handle(bodiless(s.labelMessage(true))))
	authed.DELETE("/email-messages/:id/labels/:label/", s.handle(s.labelMessage(false)))
	authed.POST("/email-messages/:id/spam/", s.handle(bodiless(s.markSpam(true))))
	authed.POST("/email-messages/:id/not-spam/", s.handle(bodiless(s.markSpam(false))))
	authed.POST("/email-messages/:id/reply/", s.handle(s.idempotent(maxBodyBytes, s.recoverMessage, s.respond("reply"))))
	authed.POST("/email-messages/:id/reply-all/", s.handle(s.idempotent(maxBodyBytes, s.recoverMessage, s.respond("reply-all"))))
	authed.POST("/email-messages/:id/forward/", s.handle(s.idempotent(maxBodyBytes, s.recoverMessage, s.respond("forward"))))
	authed.GET("/email-drafts/", s.handle(s.listDrafts))
	authed.POST("/email-drafts/", s.handle(s.idempotent(maxBodyBytes, s.recoverDraft, s.createDraft)))
	authed.GET("/email-drafts/:id/", s.handle(s.getDraft))
	authed.PATCH("/email-drafts/:id/", s.handle(s.updateDraft))
	authed.DELETE("/email-drafts/:id/", s.handle(s.deleteDraft))
	authed.POST("/email-drafts/:id/send/", s.handle(s.idempotent(maxBodyBytes, s.recoverMessage, s.sendDraft)))
	authed.POST("/attachments/", s.handle(s.idempotent(s.maxUpload+multipartSlack, s.recoverAttachment, s.uploadAttachment)))
	authed.GET("/attachments/:uuid/", s.downloadAttachment)

	authed.POST("/identities/:uuid/provision-phone/", s.handle(s.idempotent(maxBodyBytes, s.recoverProvision, s.provisionPhone)))
	authed.GET("/identities/:uuid/voice-agent/", s.handle(s.getVoiceAgent))
	authed.GET("/identities/:uuid/verifications/", s.handle(s.listVerifications))
	authed.PUT("/identities/:uuid/voice-agent/", s.handle(s.setVoiceAgent(true)))
	authed.PATCH("/identities/:uuid/voice-agent/", s.handle(s.setVoiceAgent(false)))
	authed.POST("/identities/:uuid/voice-agent/rotate-secret/", s.handle(bodiless(s.rotateStreamSecret)))
	authed.GET("/phone/", s.handle(s.listPhones))
	authed.GET("/phone/:id/", s.handle(s.getPhone))
	authed.GET("/messages/", s.handle(s.listSMS))
	authed.POST("/messages/send/", s.handle(s.idempotent(maxBodyBytes, s.recoverSMS, s.sendSMS)))
	authed.GET("/messages/:id/", s.handle(s.getSMS))
	authed.PUT("/messages/:id/", s.handle(updateReadFlag(true, s.app.SMS.Get, s.app.SMS.SetRead, viewSMS)))
	authed.PATCH("/messages/:id/", s.handle(updateReadFlag(false, s.app.SMS.Get, s.app.SMS.SetRead, viewSMS)))
	authed.DELETE("/messages/:id/", s.handle(s.deleteSMS))
	authed.GET("/rules/", s.handle(s.listRules))
	authed.POST("/rules/", s.handle(s.createRule))
	authed.DELETE("/rules/:id/", s.handle(s.deleteRule))
	authed.GET("/sms-inbox/", s.handle(s.listConversations))
	authed.GET("/sms-inbox/:id/", s.handle(s.getConversation))
	authed.GET("/calls/", s.handle(s.listCalls))
	authed.POST("/calls/", s.handle(s.idempotent(maxBodyBytes, s.recoverCall, s.placeCall)))
	authed.GET("/calls/:id/", s.handle(s.getCall))
	authed.POST("/calls/:id/hangup/", s.handle(bodiless(s.hangUpCall)))
	authed.GET("/calls/:id/recording/", s.pathBytes("Call", "audio/wav", s.app.Calls.Recording))

	authed.GET("/events/", s.handle(s.listEvents))
	authed.GET("/events/stream/", s.streamEvents)

	authed.GET("/webhooks/", s.handle(s.listWebhooks))
	authed.POST("/webhooks/", s.handle(s.idempotentVault(s.recoverWebhook, s.createWebhook)))
	authed.GET("/webhooks/:uuid/", s.handle(s.webhookAction(s.getWebhook)))
	authed.PATCH("/webhooks/:uuid/", s.handle(s.webhookAction(s.patchWebhook)))
	authed.DELETE("/webhooks/:uuid/", s.handle(s.webhookAction(s.deleteWebhook)))
	authed.GET("/webhooks/:uuid/secret/", s.handle(s.webhookAction(s.webhookSecret)))
	authed.POST("/webhooks/:uuid/rotate-secret/", s.handle(bodiless(s.webhookAction(s.rotateWebhookSecret))))
	authed.POST("/webhooks/:uuid/test/", s.handle(bodiless(s.webhookAction(s.testWebhook))))
	authed.GET("/webhooks/:uuid/deliveries/", s.handle(s.webhookAction(s.listDeliveries)))
	authed.POST("/webhooks/:uuid/deliveries/:delivery/retry/", s.handle(bodiless(s.webhookAction(s.retryDelivery))))

	// Provider webhooks: Twilio signs its requests; the simulator's takes a key.
	hooks := e.Group("/webhooks")
	hooks.POST("/twilio/sms/", s.inboundSMSWebhook)
	hooks.POST("/twilio/status/", s.handle(s.statusWebhook))
	hooks.POST("/twilio/voice/", s.voiceWebhook)
	hooks.POST("/twilio/call-status/", s.handle(s.callStatusWebhook))
	hooks.POST("/telnyx/messaging/", s.handle(s.telnyxMessagingWebhook)) // Telnyx signs the bodies
	hooks.POST("/telnyx/voice/", s.telnyxVoiceWebhook)
	hooks.POST("/telnyx/call-status/", s.handle(s.telnyxCallStatusWebhook))
	hooks.POST("/sim/sms/", s.authenticate, s.throttleKey, s.handle(s.simulatedSMS))
	hooks.POST("/sim/call/", s.authenticate, s.throttleKey, s.handle(s.simulatedCall))
	// The provider's media WebSockets: signed like its webhooks, and each
	// opened by a one-time token.
	e.GET("/media/:token/", s.media)
	// Mail providers sign theirs (mailproviders.go). Mailgun posts a
	// route's whole message only to a URL ending in "mime": no slash.
	hooks.POST("/mailgun/events/", s.mailgunEvents)
	hooks.POST("/mailgun/mime", s.mailgunMIME)
	hooks.POST("/ses/", s.sesWebhook)
}

const principalKey = "callsign.principal"

// authenticate resolves the bearer credentials or answers 401.
func (s *server) authenticate(c *gin.Context) {
	h := c.GetHeader("Authorization")
	if h == "" {
		s.fail(c, core.Unauthorized("Authentication credentials were not provided."))
		return
	}
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		s.fail(c, core.Unauthorized("Invalid Authorization header; use: Bearer <key>."))
		return
	}
	p, err := s.app.Auth.Authenticate(c.Request.Context(), token)
	if err != nil {
		// Failed attempts count against the address, so guessing is throttled too.
		if wait := s.limits.addresses.take(c.ClientIP()); wait > 0 {
			err = throttled(wait)
		}
		s.fail(c, err)
		return
	}
	c.Set(principalKey, p)
	c.Next()
}

func principal(c *gin.Context) core.Principal {
	p, _ := c.Get(principalKey)
	return p.(core.Principal)
}

// accessLog writes one line per request. It logs the key's visible prefix,
// never the key, and the path without its query string.
func (s *server) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = "(unmatched)"
	}
	took := time.Since(start)
	if s.requests != nil {
		s.requests.Request(c.Request.Method, route, c.Writer.Status(), took)
	}
	attrs := []any{
		"method", c.Request.Method,
		"route", route,
		"path", c.Request.URL.Path,
		"status", c.Writer.Status(),
		"duration_ms", float64(took.Microseconds()) / 1000,
		"remote", c.ClientIP(),
	}
	if p, ok := c.Get(principalKey); ok {
		attrs = append(attrs, "key_prefix", p.(core.Principal).KeyPrefix)
	}
	if c.Writer.Status() == statusClientClosedRequest {
		attrs = append(attrs, "cancelled", true)
	}
	s.log.Info("http request", attrs...)
}

func (s *server) recovered(c *gin.Context, err any) {
	s.log.Error("panic serving request", "method", c.Request.Method, "route", c.FullPath(), "panic", fmt.Sprint(err))
	abortJSON(c, http.StatusInternalServerError, detail{"A server error occurred."})
}

// handler is the shape of every route: it returns the status and body to
// answer with, or an error for fail to render.
type handler func(c *gin.Context) (int, any, error)

// handle adapts a handler to Gin. A nil body answers with the status alone.
func (s *server) handle(h handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		status, body, err := h(c)
		switch {
		case err != nil:
			s.fail(c, err)
		case body == nil:
			c.Status(status)
		default:
			c.PureJSON(status, body)
		}
	}
}

// abortJSON ends a request with a JSON body. Like every JSON answer, it is
// not HTML-escaped: "&", "<" and ">" are themselves.
func abortJSON(c *gin.Context, status int, body any) {
	c.Abort()
	c.PureJSON(status, body)
}
