// Package app holds Callsign's use cases, one service per resource group.
// Every rule of the spec that needs more than pure data lives here; the
// adapters translate protocols into calls on these services.
package app

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Deps is everything the use cases need from the outside.
type Deps struct {
	Store  ports.Store
	Clock  ports.Clock
	IDs    ports.IDs
	Cipher ports.Cipher
	Hasher ports.PasswordHasher
	Log    *slog.Logger
	// Tokens signs access, refresh and session tokens.
	Tokens ports.Tokens
	// ExternalSignIn is the OpenID Connect provider; nil when none is configured.
	ExternalSignIn ports.ExternalSignIn
	// DevicePollInterval is the device flow's polling interval; 0 means
	// DefaultDevicePollInterval (tests shorten it).
	DevicePollInterval time.Duration
	// Random is the crypto source for keys, names and passwords; nil means crypto/rand.
	Random io.Reader
	// MailDomains are the platform's mail domains; the first is the default.
	MailDomains []string
	Mail        MailDeps
	// Telephony is the phone provider (Twilio or the simulator).
	Telephony ports.Telephony
	// PublicURL is where the service is reached from outside
	// (CALLSIGN_BASE_URL), for the webhooks given to the provider.
	PublicURL string
	// Observer hears what happens to messages, for metrics; nil for none.
	Observer ports.Observer
}

// App is the set of services, built once and shared by every driving adapter.
type App struct {
	Accounts   *Accounts
	Auth       *Auth
	Identities *Identities
	Health     *Health
	Vault      *Vault
	Contacts   *Contacts
	Mail       *Mail
	Mailboxes  *Mailboxes
	Sources    *Sources
	Device     *Device
	Phone      *Phone
	SMS        *SMS
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
	if deps.Mail.Retry == (RetryPolicy{}) {
		deps.Mail.Retry = DefaultRetry
	}
	base := &base{deps: deps}
	auth := &Auth{base}
	mail := &Mail{base: base, mail: deps.Mail, wake: make(chan struct{}, 1)}
	return &App{
		Accounts:   &Accounts{base},
		Auth:       auth,
		Identities: &Identities{base},
		Health:     &Health{base},
		Vault:      &Vault{base: base, cipher: deps.Cipher},
		Contacts:   &Contacts{base},
		Mail:       mail,
		Mailboxes:  &Mailboxes{base: base, auth: auth, mail: mail},
		Sources:    &Sources{base: base, mail: mail, cipher: deps.Cipher, changed: make(chan struct{}, 1)},
		Device:     &Device{base},
		Phone:      &Phone{base},
		SMS:        &SMS{base},
	}
}

// base is what every service shares.
type base struct {
	deps Deps
}

// now is the current time at the precision the stores keep.
func (b *base) now() time.Time {
	return b.deps.Clock.Now().UTC().Truncate(time.Microsecond)
}

// requireManagement refuses identity keys on account-level operations.
func requireManagement(p core.Principal) error {
	if !p.IsManagement() {
		return core.Forbidden("An identity-scoped key cannot perform this action; use a management key.")
	}
	return nil
}

// selectedIdentity is the identity a create acts for (spec §1): the bound
// one for an identity key, ?identity= for a management key.
func (b *base) selectedIdentity(ctx context.Context, p core.Principal, requested string) (core.Identity, error) {
	id, err := p.Scope(requested).Single("identity")
	if err != nil {
		return core.Identity{}, err
	}
	return b.deps.Store.Identity(ctx, p.AccountID, id)
}

// isNotFound reports whether err is a NotFound error (and not nil).
func isNotFound(err error) bool { return err != nil && core.KindOf(err) == core.KindNotFound }
