package app

import (
	"context"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Device runs device-code login (spec §5.6, RFC 8628): a client starts a
// request and polls; a person signs in on the verification page, picks an
// identity and approves; the client's next poll receives long-lived keys.
type Device struct {
	base
	store        ports.DeviceGrantStore
	identities   *Identities // a person picks or makes the identity to hand over
	auth         *Auth       // draws the keys
	pollInterval time.Duration
}

const (
	// DeviceCodeLifetime is how long a request waits for a person.
	DeviceCodeLifetime = 15 * time.Minute
	// DefaultDevicePollInterval is the least time between two polls.
	DefaultDevicePollInterval = 5 * time.Second
	// slowDownStep is what RFC 8628 §3.5 adds to the interval on each slow_down.
	slowDownStep = 5 * time.Second
	// forgetAfter keeps an expired request this long, so a late poll still
	// hears expired_token, then deletes it.
	forgetAfter = time.Hour
	// MaxClientNameLength bounds the name a client gives itself.
	MaxClientNameLength = 100
	deviceCodeBytes     = 32
	userCodeAttempts    = 8
)

// DeviceStart is a new request, for the client.
type DeviceStart struct {
	DeviceCode string // the client's secret, shown once
	UserCode   string // normalized; core.FormatUserCode shows it
	ExpiresIn  time.Duration
	Interval   time.Duration
}

// DeviceKeys are what a successful poll hands over.
type DeviceKeys struct {
	ManagementKey core.NewKey
	IdentityKey   core.NewKey
	Identity      core.Identity
}

// DeviceChoice is the identity a person gives the client: an existing
// one, or a new one (a blank name has one generated).
type DeviceChoice struct {
	IdentityID string
	NewName    *string
}

var errUnknownUserCode = core.NotFound("That code is not valid, was already used, or has expired. Check the code your device shows.")

func oauthError(code, description string) error {
	return &core.OAuthError{Code: code, Description: description}
}

// Start creates a request, which came from the address from.
func (s *Device) Start(ctx context.Context, clientName, from string) (DeviceStart, error) {
	clientName = strings.TrimSpace(clientName)
	if err := validateLabel("client_name", clientName, MaxClientNameLength); err != nil {
		return DeviceStart{}, err
	}
	now := s.now()
	if err := s.store.DeleteDeviceGrants(ctx, now.Add(-forgetAfter)); err != nil {
		s.log.Warn("forgetting expired device requests failed", "err", err)
	}
	deviceCode, err := core.RandomToken(s.random, deviceCodeBytes)
	if err != nil {
		return DeviceStart{}, err
	}
	g := core.DeviceGrant{ID: s.ids.NewUUID(), DeviceCodeHash: core.HashKey(deviceCode), ClientName: clientName,
		RequestedFrom: from, Status: core.DevicePending, Interval: s.pollInterval, CreatedAt: now, ExpiresAt: now.Add(DeviceCodeLifetime)}
	// A clash of user codes is rare (one in billions per live request); draw again.
	for attempt := 1; ; attempt++ {
		if g.UserCode, err = core.NewUserCode(s.random); err != nil {
			return DeviceStart{}, err
		}
		err = s.store.CreateDeviceGrant(ctx, g)
		if err == nil || conflictField(err) != "user_code" || attempt == userCodeAttempts {
			break
		}
	}
	if err != nil {
		return DeviceStart{}, err
	}
	return DeviceStart{DeviceCode: deviceCode, UserCode: g.UserCode, ExpiresIn: DeviceCodeLifetime, Interval: g.Interval}, nil
}

// Poll answers a client's poll. Every outcome but success is a
// *core.OAuthError with RFC 8628's code.
func (s *Device) Poll(ctx context.Context, deviceCode string) (DeviceKeys, error) {
	if deviceCode == "" {
		return DeviceKeys{}, oauthError(core.OAuthInvalidRequest, "device_code is required.")
	}
	g, err := s.store.DeviceGrantByDeviceCode(ctx, core.HashKey(deviceCode))
	if isNotFound(err) {
		return DeviceKeys{}, oauthError(core.OAuthInvalidGrant, "Unknown device code.")
	}
	if err != nil {
		return DeviceKeys{}, err
	}
	now := s.now()
	switch {
	case g.Status == core.DeviceRedeemed:
		return DeviceKeys{}, oauthError(core.OAuthInvalidGrant, "This device code was already used.")
	case g.Expired(now):
		return DeviceKeys{}, oauthError(core.OAuthExpiredToken, "The device code expired; start again.")
	case g.Status == core.DeviceDenied:
		return DeviceKeys{}, oauthError(core.OAuthAccessDenied, "The request was denied.")
	case g.Status == core.DeviceApproved:
		return s.redeem(ctx, g)
	}
	interval := g.Interval
	tooSoon := g.LastPolledAt != nil && now.Sub(*g.LastPolledAt) < g.Interval
	if tooSoon {
		interval += slowDownStep
	}
	if err := s.store.RecordDevicePoll(ctx, g.ID, now, interval); err != nil {
		return DeviceKeys{}, err
	}
	if tooSoon {
		return DeviceKeys{}, oauthError(core.OAuthSlowDown, "Polling too fast: wait "+interval.String()+" between polls.")
	}
	return DeviceKeys{}, oauthError(core.OAuthAuthorizationPending, "Waiting for the request to be approved.")
}

// redeem mints the keys of an approved request and spends its device code,
// in one transaction: of two concurrent polls, one gets the keys.
func (s *Device) redeem(ctx context.Context, g core.DeviceGrant) (DeviceKeys, error) {
	ident, err := s.identities.lookup(ctx, g.AccountID, g.IdentityID)
	if isNotFound(err) {
		return DeviceKeys{}, oauthError(core.OAuthInvalidGrant, "The chosen identity no longer exists; start again.")
	}
	if err != nil {
		return DeviceKeys{}, err
	}
	name := deviceKeyName(g.ClientName)
	mgmt, err := s.auth.newKey(g.AccountID, core.KeyManagement, "", name, core.OriginDevice)
	if err != nil {
		return DeviceKeys{}, err
	}
	idKey, err := s.auth.newKey(g.AccountID, core.KeyIdentity, g.IdentityID, name, core.OriginDevice)
	if err != nil {
		return DeviceKeys{}, err
	}
	ids, err := s.store.RedeemDeviceGrant(ctx, g.ID, []core.APIKey{mgmt.Record, idKey.Record})
	if core.KindOf(err) == core.KindConflict {
		return DeviceKeys{}, oauthError(core.OAuthInvalidGrant, "This device code was already used.")
	}
	if err != nil {
		return DeviceKeys{}, err
	}
	mgmt.Record.ID, idKey.Record.ID = ids[0], ids[1]
	s.log.Info("device login completed", "account", g.AccountID, "identity", g.IdentityID,
		"management_key", mgmt.Record.Prefix, "identity_key", idKey.Record.Prefix)
	return DeviceKeys{ManagementKey: mgmt, IdentityKey: idKey, Identity: ident}, nil
}

// deviceKeyName names the keys after the client that asked for them.
func deviceKeyName(client string) string {
	name := "device login"
	if client != "" {
		name += ": " + client
	}
	if r := []rune(name); len(r) > MaxKeyNameLength {
		name = string(r[:MaxKeyNameLength])
	}
	return name
}

// Pending finds the request a person typed the code of; a wrong, spent or
// expired code is NotFound.
func (s *Device) Pending(ctx context.Context, userCode string) (core.DeviceGrant, error) {
	code, ok := core.NormalizeUserCode(userCode)
	if !ok {
		return core.DeviceGrant{}, errUnknownUserCode
	}
	g, err := s.store.DeviceGrantByUserCode(ctx, code)
	if isNotFound(err) || err == nil && (g.Status != core.DevicePending || g.Expired(s.now())) {
		return core.DeviceGrant{}, errUnknownUserCode
	}
	return g, err
}

// Identities lists what a person may choose from on the verification page:
// the oldest core.MaxUnpagedList.
func (s *Device) Identities(ctx context.Context, accountID string) ([]core.Identity, error) {
	list, _, err := s.identities.List(ctx, core.Principal{AccountID: accountID, KeyType: core.KeyManagement}, "",
		ports.Page{Limit: core.MaxUnpagedList})
	return list, err
}

// Approve gives the request the chosen identity (creating it when new).
func (s *Device) Approve(ctx context.Context, accountID, userCode string, choice DeviceChoice) (core.Identity, error) {
	g, err := s.Pending(ctx, userCode)
	if err != nil {
		return core.Identity{}, err
	}
	owner := core.Principal{AccountID: accountID, KeyType: core.KeyManagement}
	var ident core.Identity
	switch {
	case choice.IdentityID != "":
		if ident, err = s.identities.Get(ctx, owner, choice.IdentityID); isNotFound(err) {
			return core.Identity{}, core.Invalid("identity", "Choose one of your identities.")
		}
	case choice.NewName != nil:
		in := IdentityInput{}
		if name := strings.TrimSpace(*choice.NewName); name != "" {
			in.Name = &name
		}
		ident, err = s.identities.Create(ctx, owner, in)
	default:
		return core.Identity{}, core.Invalid("identity", "Choose an identity, or name a new one.")
	}
	if err != nil {
		return core.Identity{}, err
	}
	return ident, s.decide(ctx, g, ports.DeviceDecision{Status: core.DeviceApproved, AccountID: accountID, IdentityID: ident.ID})
}

// Deny refuses the request; the client's next poll hears access_denied.
func (s *Device) Deny(ctx context.Context, accountID, userCode string) error {
	g, err := s.Pending(ctx, userCode)
	if err != nil {
		return err
	}
	return s.decide(ctx, g, ports.DeviceDecision{Status: core.DeviceDenied, AccountID: accountID})
}

func (s *Device) decide(ctx context.Context, g core.DeviceGrant, d ports.DeviceDecision) error {
	if err := s.store.DecideDeviceGrant(ctx, g.ID, d); err != nil {
		return err
	}
	s.log.Info("device login answered", "account", d.AccountID, "decision", string(d.Status), "client", g.ClientName)
	return nil
}
