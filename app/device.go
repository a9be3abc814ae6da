package app

import (
	"context"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Device runs device-code login (spec §5.6, RFC 8628): a client starts a
// request and polls; a person signs in on the verification page, chooses
// what the client gets and approves; the client's next poll receives one
// long-lived key: an identity key for one identity (the default) or, when
// the person chooses it, a management key.
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

// DeviceRequest is what a client asks for when it starts. KeyType and
// Identity (an identity's id or name) only preselect the choice on the
// page: the person decides.
type DeviceRequest struct {
	ClientName string
	From       string // the address the request came from
	KeyType    core.KeyType
	Identity   string
}

// DeviceKeys are what a successful poll hands over: the one key granted,
// with its identity for an identity key.
type DeviceKeys struct {
	Key      core.NewKey
	Identity *core.Identity
}

// DeviceChoice is what a person gives the client: a management key, or a
// key for an existing identity or for a new one (a blank name has one
// generated).
type DeviceChoice struct {
	Management bool
	IdentityID string
	NewName    *string
}

var errUnknownUserCode = core.NotFound("That code is not valid, was already used, or has expired. Check the code your device shows.")

func oauthError(code, description string) error {
	return &core.OAuthError{Code: code, Description: description}
}

// Start creates a request.
func (s *Device) Start(ctx context.Context, req DeviceRequest) (DeviceStart, error) {
	clientName, asked := strings.TrimSpace(req.ClientName), strings.TrimSpace(req.Identity)
	if err := validateLabel("client_name", clientName, MaxClientNameLength); err != nil {
		return DeviceStart{}, err
	}
	keyType := req.KeyType
	switch keyType {
	case "":
		keyType = core.KeyIdentity
	case core.KeyIdentity, core.KeyManagement:
	default:
		return DeviceStart{}, core.Invalid("key_type", "Must be identity or management.")
	}
	if err := validateLabel("identity", asked, MaxClientNameLength); err != nil {
		return DeviceStart{}, err
	}
	if keyType == core.KeyManagement && asked != "" {
		return DeviceStart{}, core.Invalid("identity", "A management key is for the whole account: name no identity with key_type management.")
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
		RequestedFrom: req.From, RequestedKeyType: keyType, RequestedIdentity: asked, Status: core.DevicePending, Interval: s.pollInterval, CreatedAt: now, ExpiresAt: now.Add(DeviceCodeLifetime)}
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

// redeem mints the key of an approved request and spends its device code,
// in one transaction: of two concurrent polls, one gets the key.
func (s *Device) redeem(ctx context.Context, g core.DeviceGrant) (DeviceKeys, error) {
	var keys DeviceKeys
	if g.KeyType != core.KeyManagement {
		ident, err := s.identities.lookup(ctx, g.AccountID, g.IdentityID)
		if isNotFound(err) {
			return DeviceKeys{}, oauthError(core.OAuthInvalidGrant, "The chosen identity no longer exists; start again.")
		}
		if err != nil {
			return DeviceKeys{}, err
		}
		keys.Identity = &ident
	}
	key, err := s.auth.newKey(g.AccountID, g.KeyType, g.IdentityID, deviceKeyName(g.ClientName), core.OriginDevice)
	if err != nil {
		return DeviceKeys{}, err
	}
	ids, err := s.store.RedeemDeviceGrant(ctx, g.ID, []core.APIKey{key.Record})
	if core.KindOf(err) == core.KindConflict {
		return DeviceKeys{}, oauthError(core.OAuthInvalidGrant, "This device code was already used.")
	}
	if err != nil {
		return DeviceKeys{}, err
	}
	key.Record.ID = ids[0]
	keys.Key = key
	s.log.Info("device login completed", "account", g.AccountID, "key_type", string(g.KeyType), "identity", g.IdentityID,
		"key", key.Record.Prefix)
	return keys, nil
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

// Suggest is the choice the page preselects: what the client asked for
// (an identity it named by id or name, a new identity of that name, or a
// management key), else the oldest identity, else a new one.
func Suggest(g core.DeviceGrant, identities []core.Identity) DeviceChoice {
	if g.RequestedKeyType == core.KeyManagement {
		return DeviceChoice{Management: true}
	}
	if asked := g.RequestedIdentity; asked != "" {
		for _, ident := range identities {
			if ident.ID == asked || strings.EqualFold(ident.Name, asked) {
				return DeviceChoice{IdentityID: ident.ID}
			}
		}
		return DeviceChoice{NewName: &asked}
	}
	if len(identities) > 0 {
		return DeviceChoice{IdentityID: identities[0].ID}
	}
	return DeviceChoice{NewName: new(string)}
}

// Approve gives the request a management key, or an identity key for the
// chosen identity (creating it when new); the identity is zero for a
// management key.
func (s *Device) Approve(ctx context.Context, accountID, userCode string, choice DeviceChoice) (core.Identity, error) {
	g, err := s.Pending(ctx, userCode)
	if err != nil {
		return core.Identity{}, err
	}
	owner := core.Principal{AccountID: accountID, KeyType: core.KeyManagement}
	var ident core.Identity
	switch {
	case choice.Management:
		return core.Identity{}, s.decide(ctx, g, ports.DeviceDecision{Status: core.DeviceApproved, AccountID: accountID, KeyType: core.KeyManagement})
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
	return ident, s.decide(ctx, g, ports.DeviceDecision{Status: core.DeviceApproved, AccountID: accountID,
		KeyType: core.KeyIdentity, IdentityID: ident.ID})
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
	s.log.Info("device login answered", "account", d.AccountID, "decision", string(d.Status), "key_type", string(d.KeyType), "client", g.ClientName)
	return nil
}
