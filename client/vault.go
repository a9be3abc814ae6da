package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Passwords lists stored logins; domain, when set, keeps those of that
// host and its subdomains.
func (c *Client) Passwords(ctx context.Context, domain string) ([]Password, error) {
	q := url.Values{}
	if domain != "" {
		q.Set("domain", domain)
	}
	var l []Password
	return l, c.call(ctx, "GET", "/api/passwords/", c.scoped(q), nil, &l)
}

// Password is one stored login.
func (c *Client) Password(ctx context.Context, uuid string) (Password, error) {
	var p Password
	if err := c.call(ctx, "GET", "/api/passwords/"+url.PathEscape(uuid)+"/", nil, nil, &p); err != nil {
		return Password{}, err
	}
	return p, c.own(p.Identity, "Password")
}

// PasswordForDomain is the one login stored for a site (its host or a
// subdomain); several are a validation error on domain listing them.
func (c *Client) PasswordForDomain(ctx context.Context, domain string) (Password, error) {
	l, err := c.Passwords(ctx, domain)
	switch {
	case err != nil:
		return Password{}, err
	case len(l) == 0:
		return Password{}, notFound("Password")
	case len(l) > 1:
		found := make([]string, len(l))
		for i, p := range l {
			found[i] = p.Domain + " (" + p.Username + "): " + p.UUID
		}
		return Password{}, &Error{Status: http.StatusBadRequest, Fields: map[string][]string{
			"domain": {"Several logins match; name one by uuid: " + strings.Join(found, "; ") + "."}}}
	}
	return l[0], nil
}

// PasswordInput is a login to store.
type PasswordInput struct {
	Domain   string `json:"domain"`
	Username string `json:"username,omitempty"`
	Password string `json:"password"`
	Notes    string `json:"notes,omitempty"`
}

// SavePassword stores a login.
func (c *Client) SavePassword(ctx context.Context, in PasswordInput) (Password, error) {
	var p Password
	return p, c.call(ctx, "POST", "/api/passwords/", c.scoped(nil), in, &p)
}

// PasswordSpec says what a generated password is made of; nil classes are
// the API's defaults (all on), Length 0 its default (20).
type PasswordSpec struct {
	Length                                int
	Lowercase, Uppercase, Digits, Special *bool
	ExcludeChars                          string
}

// GeneratePassword draws a password (nothing is stored).
func (c *Client) GeneratePassword(ctx context.Context, spec PasswordSpec) (string, error) {
	q := url.Values{}
	if spec.Length != 0 {
		q.Set("length", strconv.Itoa(spec.Length))
	}
	for name, v := range map[string]*bool{"lowercase": spec.Lowercase, "uppercase": spec.Uppercase, "digits": spec.Digits, "special": spec.Special} {
		if v != nil {
			q.Set(name, strconv.FormatBool(*v))
		}
	}
	if spec.ExcludeChars != "" {
		q.Set("exclude_chars", spec.ExcludeChars)
	}
	var out struct {
		Password string `json:"password"`
	}
	return out.Password, c.call(ctx, "GET", "/api/passwords/generate-password/", q, nil, &out)
}

// Secrets lists secrets; key, when set, keeps the one with that key.
func (c *Client) Secrets(ctx context.Context, key string) ([]Secret, error) {
	q := url.Values{}
	if key != "" {
		q.Set("key", key)
	}
	var l []Secret
	return l, c.call(ctx, "GET", "/api/secrets/", c.scoped(q), nil, &l)
}

// Secret is one secret by uuid.
func (c *Client) Secret(ctx context.Context, uuid string) (Secret, error) {
	var s Secret
	if err := c.call(ctx, "GET", "/api/secrets/"+url.PathEscape(uuid)+"/", nil, nil, &s); err != nil {
		return Secret{}, err
	}
	return s, c.own(s.Identity, "Secret")
}

// SecretByKey is the secret with that key (name). Keys are unique per
// identity, so a management key must act for one identity.
func (c *Client) SecretByKey(ctx context.Context, key string) (Secret, error) {
	l, err := c.Secrets(ctx, key)
	if err != nil {
		return Secret{}, err
	}
	if len(l) != 1 {
		return Secret{}, notFound("Secret")
	}
	return l[0], nil
}

// SetSecret stores value under key: a new secret, or a new value for the
// one that has the key. created says which.
func (c *Client) SetSecret(ctx context.Context, key, value string) (s Secret, created bool, err error) {
	for attempt := 0; ; attempt++ {
		existing, err := c.SecretByKey(ctx, key)
		switch {
		case err == nil:
			err = c.call(ctx, "PATCH", "/api/secrets/"+url.PathEscape(existing.UUID)+"/", nil, map[string]string{"value": value}, &s)
			return s, false, err
		case !NotFound(err):
			return Secret{}, false, err
		}
		err = c.call(ctx, "POST", "/api/secrets/", c.scoped(nil), map[string]string{"key": key, "value": value}, &s)
		var e *Error
		if attempt == 0 && errors.As(err, &e) && e.Status == http.StatusConflict {
			continue // created meanwhile by someone else: update it
		}
		return s, err == nil, err
	}
}
