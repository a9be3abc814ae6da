// Package app holds Callsign's use cases, one service per resource group.
// Every rule of the spec that needs more than pure data lives here; the
// adapters translate protocols into calls on these services.
//
// Each service's struct names what it touches: the stores it holds (each
// store is held by one service, or two; the mail store by each mail
// service for its own part), the other services it calls and the
// providers it uses. New builds them all, in the order they depend on
// each other.
package app

import (
	"cmp"
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Deps is what New builds the services from: the ports, through which the
// services reach the world, and the settings that configure them.
type Deps struct {
	Ports
	Settings
}

// Ports are the adapters of the outside world.
type Ports struct {
	// Store is every store; New hands each service the ones it uses.
	Store  ports.Store
	Clock  ports.Clock
	IDs    ports.IDs
	Cipher ports.Cipher
	Hasher ports.PasswordHasher
	// Random is the crypto source for keys, names and passwords; nil means crypto/rand.
	Random io.Reader
	// Log is where services report what they cannot return; nil discards.
	Log *slog.Logger
	// Tokens signs access, refresh and session tokens.
	Tokens ports.Tokens
	// ExternalSignIn is the OpenID Connect provider; nil when none is configured.
	ExternalSignIn ports.ExternalSignIn
	Parser         ports.MailParser
	Composer       ports.MailComposer
	// Relay delivers mail to the outside world; nil means no external
	// delivery: such recipients fail with a clear delivery_error.
	Relay ports.MailRelay
	// Telephony is the phone provider (Twilio or the simulator).
	Telephony ports.Telephony
	// NumberPlan checks the numbers callers give against their country's
	// numbering plan; nil checks their E.164 shape only.
	NumberPlan ports.NumberPlan
	// Observer hears what happens to messages, for metrics; nil for none.
	Observer ports.Observer
	// Resolver asks the DNS, for custom domains' records.
	Resolver ports.Resolver
	// MailAuth checks received mail (SPF, DKIM, DMARC) and knows which
	// domain names are registrable.
	MailAuth ports.MailAuthenticator
	// Spam judges received mail (rspamd); nil judges nothing.
	Spam ports.SpamChecker
	// Signer makes DKIM keys and signs outgoing mail.
	Signer ports.DKIMSigner
	// WebhookSender makes webhook requests under the outbound-destination
	// policy; nil: webhooks cannot be created.
	WebhookSender ports.WebhookSender
	// MediaPlayer plays the simulator's side of streamed calls; nil
	// without the simulator.
	MediaPlayer ports.MediaPlayer
	// EventJSON renders an event as the API shows it (a webhook's body).
	EventJSON func(core.Event) ([]byte, error)
	// Reports reads delivery status notifications (bounces).
	Reports ports.DSNReader
	// OTP computes the TOTP codes of password entries.
	OTP ports.OneTimePasswords
	// Destinations resolves and dials the hosts IMAP sources name, under
	// the outbound-destination policy; nil refuses every source.
	Destinations ports.Destinations
}

// Settings are the choices of configuration the services follow.
type Settings struct {
	// MailDomains are the platform's mail domains; the first is the default.
	MailDomains []string
	// PublicURL is where the service is reached from outside
	// (CALLSIGN_BASE_URL), for the webhooks given to the provider.
	PublicURL string
	// MaxMessageBytes bounds a message (inbound, composed) and an upload.
	MaxMessageBytes int64
	// Retry is the outbox's schedule for temporary failures; zero means DefaultRetry.
	Retry RetryPolicy
	// OutboxLease is how long a claimed message is its worker's; zero
	// means DefaultOutboxLease. The relay's attempts must end within
	// AttemptBound of it.
	OutboxLease time.Duration
	// Postmaster is the inbox that receives postmaster@ each platform
	// domain; "" means the service's oldest inbox.
	Postmaster string
	// DevicePollInterval is the device flow's polling interval; 0 means
	// DefaultDevicePollInterval (tests shorten it).
	DevicePollInterval time.Duration
	// Domain is the service's side of custom domains' records
	// (CALLSIGN_MX_HOST, CALLSIGN_SPF_INCLUDE).
	Domain core.DomainSettings
	// PlatformKeys DKIM-sign the platform domains' mail, one signature
	// each (CALLSIGN_DKIM_KEY_FILE, CALLSIGN_DKIM_SELECTOR).
	PlatformKeys []ports.DKIMKeyPair
	// InboundAuth says which SMTP connections' mail gets SPF, DKIM and
	// DMARC checks (CALLSIGN_INBOUND_AUTH); "" means off.
	InboundAuth core.InboundAuth
	// SpamTimeout bounds one spam check (CALLSIGN_RSPAMD_TIMEOUT); zero
	// means DefaultSpamTimeout.
	SpamTimeout time.Duration
	// EventRetention is how long events are kept (CALLSIGN_EVENT_RETENTION);
	// zero means core.EventRetention.
	EventRetention time.Duration
	// Quotas are the limits per account (CALLSIGN_QUOTA_*); none means
	// unlimited.
	Quotas core.Limits
	// MaxActiveCalls bounds an account's calls in progress
	// (CALLSIGN_QUOTA_ACTIVE_CALLS); 0 means unlimited.
	MaxActiveCalls int64
	// CallMaxDuration bounds a call (CALLSIGN_CALL_MAX_DURATION); zero
	// means DefaultCallMaxDuration.
	CallMaxDuration time.Duration
	// CertificateHosts always get a certificate by ACME: the base URL's
	// host and the MX host.
	CertificateHosts []string
}

// App is the set of services, built once and shared by every driving adapter.
type App struct {
	Accounts     *Accounts
	Auth         *Auth
	Identities   *Identities
	Health       *Health
	Vault        *Vault
	Contacts     *Contacts
	Inboxes      *Inboxes
	Receiving    *Receiving
	Outbox       *Outbox
	Sending      *Sending
	Reading      *Reading
	Domains      *Domains
	Suppressions *Suppressions
	Mailboxes    *Mailboxes
	Sources      *Sources
	Device       *Device
	Phone        *Phone
	SMS          *SMS
	Calls        *Calls
	Idempotency  *Idempotency
	// Verifications lists the codes and links received mail and texts carried.
	Verifications *Verifications
	Events        *Events
	Webhooks      *Webhooks
	Rules         *Rules
	// Certificates is ACME's state and which names get certificates.
	Certificates *Certificates
}

// New builds the services over deps.
func New(deps Deps) *App {
	if deps.Random == nil {
		deps.Random = rand.Reader
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Observer == nil {
		deps.Observer = noObserver{}
	}
	if deps.Retry == (RetryPolicy{}) {
		deps.Retry = DefaultRetry
	}
	if deps.OutboxLease <= 0 {
		deps.OutboxLease = DefaultOutboxLease
	}
	if deps.WebhookSender == nil {
		deps.WebhookSender = noWebhooks{}
	}
	if deps.EventJSON == nil {
		deps.EventJSON = func(e core.Event) ([]byte, error) { return e.Data, nil }
	}
	if deps.EventRetention <= 0 {
		deps.EventRetention = core.EventRetention
	}
	if deps.SpamTimeout <= 0 {
		deps.SpamTimeout = DefaultSpamTimeout
	}
	if deps.DevicePollInterval <= 0 {
		deps.DevicePollInterval = DefaultDevicePollInterval
	}
	b := base{clock: deps.Clock, ids: deps.IDs, random: deps.Random, log: deps.Log, observer: deps.Observer, plan: deps.NumberPlan}
	store := deps.Store
	g := gate{accounts: store, usage: store, clock: deps.Clock, limits: deps.Quotas}

	numbers := &numbers{base: b, store: store, telephony: deps.Telephony, publicURL: deps.PublicURL}
	domains := &Domains{base: b, store: store, gate: g, resolver: deps.Resolver, names: deps.MailAuth,
		signer: deps.Signer, cipher: deps.Cipher, settings: deps.Domain, platform: deps.MailDomains, platformKeys: deps.PlatformKeys}
	identities := &Identities{base: b, store: store, gate: g, numbers: numbers, domains: domains, mailDomains: deps.MailDomains}
	auth := &Auth{base: b, keys: store, accounts: store, identities: identities,
		hasher: deps.Hasher, tokens: deps.Tokens, families: store, external: deps.ExternalSignIn}
	accounts := &Accounts{base: b, store: store, auth: auth, hasher: deps.Hasher, gate: g}
	suppressions := &Suppressions{store: store}
	verified := &changeFeed[string]{}
	rules := &Rules{base: b, store: store, identities: identities}
	mailChanged := &changeFeed[int64]{}
	spam := spamFilter{checker: deps.Spam, timeout: deps.SpamTimeout}
	inboxes := &Inboxes{base: b, inboxes: store, domains: domains, identities: identities, gate: g,
		mailDomains: deps.MailDomains, changes: mailChanged}
	bounces := &bounces{base: b, outbox: store, inboxes: inboxes, domains: domains, suppressions: suppressions, reports: deps.Reports}
	receiving := &Receiving{base: b, messages: store, inboxes: store, domains: domains, rules: rules, gate: g, bounces: bounces,
		mailAuth: deps.MailAuth, inboundAuth: deps.InboundAuth, parser: deps.Parser, maxBytes: deps.MaxMessageBytes,
		spam: spam, postmaster: deps.Postmaster, changes: mailChanged, verified: verified}
	outbox := &Outbox{base: b, messages: store, outbox: store, receiving: receiving, bounces: bounces, relay: deps.Relay,
		retry: deps.Retry, lease: deps.OutboxLease, wake: make(chan struct{}, 1)}
	reading := &Reading{base: b, messages: store, parser: deps.Parser, changes: mailChanged, verified: verified,
		spam: spam}
	sending := &Sending{base: b, drafts: store, uploads: store, inboxes: inboxes, reading: reading, outbox: outbox,
		identities: identities, rules: rules, suppressions: suppressions, domains: domains, gate: g,
		composer: deps.Composer, maxBytes: deps.MaxMessageBytes}
	phone := &Phone{base: b, store: store, gate: g, identities: identities, numbers: numbers, telephony: deps.Telephony,
		hooks: deps.WebhookSender, cipher: deps.Cipher}
	events := &Events{base: b, store: store, retention: deps.EventRetention, render: deps.EventJSON, changed: make(chan struct{}),
		closed: make(chan struct{}), watching: make(chan struct{})}
	sources := &Sources{base: b, store: store, inboxes: inboxes, receiving: receiving, cipher: deps.Cipher, destinations: deps.Destinations, changed: make(chan struct{}, 1)}
	// What goes with deleted mailboxes: their addresses from the cache of
	// recipients, and their IMAP sources' workers, at once.
	inboxes.deletedWith = func(in core.Inbox) {
		receiving.recipients.forget(in.Email)
		sources.nudge()
	}
	identities.deletedWith = func(ident core.Identity) {
		receiving.recipients.forgetIdentity(ident.ID)
		sources.nudge()
	}
	return &App{
		Accounts:     accounts,
		Auth:         auth,
		Identities:   identities,
		Health:       &Health{base: b, store: store},
		Vault:        &Vault{base: b, store: store, identities: identities, gate: g, cipher: deps.Cipher, auth: auth, otp: deps.OTP},
		Contacts:     &Contacts{base: b, store: store, identities: identities},
		Inboxes:      inboxes,
		Receiving:    receiving,
		Outbox:       outbox,
		Sending:      sending,
		Reading:      reading,
		Domains:      domains,
		Suppressions: suppressions,
		Mailboxes:    &Mailboxes{auth: auth, inboxes: inboxes, reading: reading, events: events, messages: store},
		Sources:      sources,
		Device:       &Device{base: b, store: store, identities: identities, auth: auth, pollInterval: deps.DevicePollInterval},
		Phone:        phone,
		SMS: &SMS{base: b, store: store, gate: g, numbers: store, identities: identities, telephony: deps.Telephony, rules: rules,
			publicURL: deps.PublicURL, verified: verified},
		Calls: &Calls{base: b, store: store, numbers: store, telephony: deps.Telephony, identities: identities, gate: g, rules: rules,
			hooks: deps.WebhookSender, cipher: deps.Cipher, publicURL: deps.PublicURL, maxActive: deps.MaxActiveCalls,
			maxDuration: cmp.Or(deps.CallMaxDuration, DefaultCallMaxDuration), placed: make(chan struct{}, 1), player: deps.MediaPlayer,
			streams: map[int64]context.CancelFunc{}},
		Idempotency:   &Idempotency{base: b, store: store, cipher: deps.Cipher},
		Verifications: &Verifications{base: b, store: store, identities: identities, arrived: verified, events: events},
		Events:        events,
		Webhooks: &Webhooks{base: b, store: store, identities: identities, events: events, sender: deps.WebhookSender,
			cipher: deps.Cipher, render: deps.EventJSON, limits: deps.Quotas},
		Rules:        rules,
		Certificates: &Certificates{base: b, store: store, domains: domains, cipher: deps.Cipher, hosts: deps.CertificateHosts},
	}
}

// Close stops what the services run on their own: the events' watch of the
// store. The workers that Run* methods start end with their contexts.
func (a *App) Close() { a.Events.Close() }

// base is what every service has: the clock, identifiers, the crypto
// source, the log and the observer (observe.go). It reaches no store and
// no provider.
type base struct {
	clock    ports.Clock
	ids      ports.IDs
	random   io.Reader
	log      *slog.Logger
	observer ports.Observer
	plan     ports.NumberPlan // nil: E.164 shape only
}

// possibleNumber refuses, on field, an E.164 number (its shape checked
// already) that its country's numbering plan does not allow: Twilio
// refuses to text +1415, so we refuse to take it anywhere.
func (b base) possibleNumber(field, number string) error {
	if b.plan != nil && !b.plan.PossibleNumber(number) {
		return core.Invalid(field, core.ImpossibleNumberHint, number)
	}
	return nil
}

// now is the current time at the precision the stores keep.
func (b base) now() time.Time {
	return b.clock.Now().UTC().Truncate(time.Microsecond)
}

// requireManagement refuses identity keys on account-level operations.
func requireManagement(p core.Principal) error {
	if !p.IsManagement() {
		return core.Forbidden("An identity-scoped key cannot perform this action; use a management key.")
	}
	return nil
}

// isNotFound reports whether err is a NotFound error (and not nil).
func isNotFound(err error) bool { return err != nil && core.KindOf(err) == core.KindNotFound }
