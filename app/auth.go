package app

import (
	"context"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Auth authenticates requests and manages API keys (spec §5), and signs
// accounts in with passwords, tokens and an OpenID Connect provider.
type Auth struct {
	base
	keys       ports.KeyStore
	accounts   ports.AccountStore // sign-in finds accounts
	identities *Identities        // an identity key is fenced to an existing identity
	hasher     ports.PasswordHasher
	tokens     ports.Tokens
	families   ports.RefreshFamilyStore // password sign-ins' refresh tokens
	external   ports.ExternalSignIn     // nil when none is configured
}

// touchInterval bounds how often a key's last_used_dt is written: a write on
// every request would turn every read into a write.
const touchInterval = time.Minute

// MaxKeyNameLength bounds a key's name.
const MaxKeyNameLength = 100

var errBadKey = core.Unauthorized("Invalid API key.")

// Authenticate resolves a presented API key to the principal it acts for.
func (s *Auth) Authenticate(ctx context.Context, presented string) (core.Principal, error) {
	t, ok := core.ParseKeyType(presented)
	if !ok {
		if !strings.HasPrefix(presented, "svc_") {
			return s.authenticateToken(ctx, presented)
		}
		return core.Principal{}, errBadKey
	}
	k, err := s.keys.KeyByHash(ctx, core.HashKey(presented))
	if core.KindOf(err) == core.KindNotFound {
		return core.Principal{}, errBadKey
	}
	if err != nil {
		return core.Principal{}, err
	}
	// The lookup already matched the hash; the constant-time comparison keeps
	// the decision itself free of timing differences.
	if !core.KeyMatches(presented, k.Hash) || k.Type != t {
		return core.Principal{}, errBadKey
	}
	now := s.now()
	if k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) >= touchInterval {
		if err := s.keys.TouchKey(ctx, k.ID, now); err != nil {
			s.log.Warn("recording key use failed", "key_prefix", k.Prefix, "err", err)
		}
	}
	return core.Principal{AccountID: k.AccountID, KeyType: k.Type, IdentityID: k.IdentityID, KeyID: k.ID, KeyPrefix: k.Prefix,
		CanProvision: k.CanProvision, CanSend: k.CanSend, Origin: core.OriginAPI}, nil
}

// KeyInput is what a caller may set on a new key.
type KeyInput struct {
	Name     string
	Identity string // identity keys: the identity's uuid
	// CanProvision, for an identity key, lets it buy a phone number.
	CanProvision bool
	// CanSend, for an identity key, lets it send itself; nil means true.
	CanSend *bool
}

// CreateManagementKey mints a management key; identity keys may not.
func (s *Auth) CreateManagementKey(ctx context.Context, p core.Principal, in KeyInput) (core.NewKey, error) {
	if err := requireManagement(p); err != nil {
		return core.NewKey{}, err
	}
	if err := validateKeyName(in.Name); err != nil {
		return core.NewKey{}, err
	}
	return s.mintKey(ctx, p.AccountID, in.Name, p.Origin)
}

// CreateIdentityKey mints a key fenced to one identity; a management key
// must name the identity. Identity keys mint no keys: a key an identity key
// made would outlive that key's revocation, so revoking a leaked key would
// not end what it started (issue 11 item 15: this, rather than revoking
// the keys a key minted, is the choice).
func (s *Auth) CreateIdentityKey(ctx context.Context, p core.Principal, in KeyInput) (core.NewKey, error) {
	if p.KeyType == core.KeyIdentity {
		return core.NewKey{}, core.Forbidden("An identity key cannot create keys; use a management key.")
	}
	if err := validateKeyName(in.Name); err != nil {
		return core.NewKey{}, err
	}
	if in.CanProvision && !p.MayProvision() {
		return core.NewKey{}, core.Forbidden("This key cannot provision numbers, so it cannot give a key that can.")
	}
	identityID, err := p.Scope(in.Identity).Single("identity")
	if err != nil {
		return core.NewKey{}, err
	}
	if _, err := s.identities.lookup(ctx, p.AccountID, identityID); err != nil {
		if core.KindOf(err) == core.KindNotFound {
			return core.NewKey{}, core.Invalid("identity", "Identity not found.")
		}
		return core.NewKey{}, err
	}
	k, err := s.newKey(p.AccountID, core.KeyIdentity, identityID, in.Name, p.Origin)
	if err != nil {
		return core.NewKey{}, err
	}
	k.Record.CanProvision = in.CanProvision
	if in.CanSend != nil {
		k.Record.CanSend = *in.CanSend
	}
	return s.storeKey(ctx, k)
}

// mintKey makes and stores a management key.
func (s *Auth) mintKey(ctx context.Context, accountID, name string, origin core.KeyOrigin) (core.NewKey, error) {
	k, err := s.newKey(accountID, core.KeyManagement, "", name, origin)
	if err != nil {
		return core.NewKey{}, err
	}
	return s.storeKey(ctx, k)
}

func (s *Auth) storeKey(ctx context.Context, k core.NewKey) (core.NewKey, error) {
	var err error
	if k.Record.ID, err = s.keys.CreateKey(ctx, k.Record); err != nil {
		return core.NewKey{}, err
	}
	return k, nil
}

// newKey draws a key for the account without storing it.
func (s *Auth) newKey(accountID string, t core.KeyType, identityID, name string, origin core.KeyOrigin) (core.NewKey, error) {
	k, err := core.MintKey(t, s.random)
	if err != nil {
		return core.NewKey{}, err
	}
	k.Record.AccountID, k.Record.IdentityID, k.Record.Name, k.Record.Origin, k.Record.CreatedAt = accountID, identityID, name, origin, s.now()
	k.Record.CanSend = true // a key sends unless it is made or set not to
	return k, nil
}

func validateKeyName(name string) error { return validateLabel("name", name, MaxKeyNameLength) }

// validateLabel checks a one-line name of at most max characters.
func validateLabel(field, name string, max int) error {
	if len([]rune(name)) > max {
		return core.Invalid(field, "Ensure this field has no more than %d characters.", max)
	}
	if strings.ContainsAny(name, "\r\n\x00") {
		return core.Invalid(field, "Line breaks are not allowed.")
	}
	return nil
}

// ListKeys lists a page of the keys of one type: management keys for
// management keys only; identity keys in scope.
func (s *Auth) ListKeys(ctx context.Context, p core.Principal, t core.KeyType, requestedIdentity string, page ports.Page) ([]core.APIKey, int, error) {
	if t == core.KeyManagement {
		if err := requireManagement(p); err != nil {
			return nil, 0, err
		}
		return s.keys.Keys(ctx, p.AccountID, t, "", page)
	}
	scope := p.Scope(requestedIdentity)
	if scope.Empty {
		return nil, 0, nil
	}
	return s.keys.Keys(ctx, p.AccountID, t, scope.IdentityID, page)
}

// Key shows one key of type t.
func (s *Auth) Key(ctx context.Context, p core.Principal, t core.KeyType, id int64) (core.APIKey, error) {
	if t == core.KeyManagement {
		if err := requireManagement(p); err != nil {
			return core.APIKey{}, err
		}
	}
	k, err := s.keys.Key(ctx, p.AccountID, id)
	if err != nil {
		return core.APIKey{}, err
	}
	if k.Type != t || !p.Scope("").Allows(k.AccountID, k.IdentityID) {
		return core.APIKey{}, core.NotFound("Key not found.")
	}
	return k, nil
}

// SetCanSend gives or takes an identity key's right to send. Only a
// management key may: an identity key must not grant itself the right its
// approver withheld.
func (s *Auth) SetCanSend(ctx context.Context, p core.Principal, id int64, canSend bool) (core.APIKey, error) {
	if !p.IsManagement() {
		return core.APIKey{}, core.Forbidden("Only a management key changes a key's can_send.")
	}
	k, err := s.Key(ctx, p, core.KeyIdentity, id)
	if err != nil {
		return core.APIKey{}, err
	}
	if err := s.keys.SetKeyCanSend(ctx, p.AccountID, id, canSend); err != nil {
		return core.APIKey{}, err
	}
	k.CanSend = canSend
	return k, nil
}

// DeleteKey revokes a key at once: the next request with it is 401. The
// last management key of an account is not deleted (409, core.MayDeleteKey,
// which the store asks in the delete's transaction), so that an account
// cannot lock itself out of its own API.
func (s *Auth) DeleteKey(ctx context.Context, p core.Principal, t core.KeyType, id int64) error {
	if _, err := s.Key(ctx, p, t, id); err != nil {
		return err
	}
	return s.keys.DeleteKey(ctx, p.AccountID, id)
}
