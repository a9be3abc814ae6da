// Package acmecert obtains and renews certificates by ACME with
// golang.org/x/crypto/acme/autocert: it is in x/crypto, which we already
// depend on, and small; certmagic would bring its own storage, locking and
// DNS providers, which the database and the app give us here.
//
// autocert keeps its state in a Cache; ours is the app's, in the database,
// so instances on one PostgreSQL serve the same certificates. autocert
// renews from whichever instance serves a name, so the cache also makes
// sure only one instance at a time talks to the CA for a name: a read that
// would lead autocert to the CA (nothing stored, or a certificate due for
// renewal) first takes the name's lease in the database; without it, the
// read waits until the holder stores its new certificate and returns that.
package acmecert

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"github.com/callsign/callsign/core"
)

// State is where certificates and the ACME account live, sealed, and who
// may ask the CA for a name (app.Certificates).
type State interface {
	// Allow says whether host may have a certificate (NotFound if not).
	Allow(ctx context.Context, host string) error
	Get(ctx context.Context, key string) ([]byte, error) // NotFound when absent
	Put(ctx context.Context, key string, data []byte) error
	Delete(ctx context.Context, key string) error
	// Claim takes or renews holder's lease on key; Release ends it.
	Claim(ctx context.Context, key, holder string) (bool, error)
	Release(ctx context.Context, key, holder string) error
}

// Config is what the manager needs.
type Config struct {
	Directory string // the CA's ACME directory URL
	Email     string // the account's contact
	State     State
	// Holder names this instance in the leases.
	Holder string
	// DefaultHost is the name served to a client that sends no server name
	// (SNI), as many SMTP clients do not: our MX host.
	DefaultHost string
	// RenewBefore is how long before expiry a certificate is renewed; zero
	// means autocert's default (a third of its lifetime, at most 30 days).
	RenewBefore time.Duration
	// Roots are the CAs trusted for the directory's own HTTPS; nil means
	// the system's (tests trust Pebble's).
	Roots *x509.CertPool
}

// Manager serves certificates by ACME to TLS listeners and answers the
// CA's http-01 challenges.
type Manager struct {
	m           *autocert.Manager
	defaultHost string
}

// directoryTimeout bounds one request to the CA.
const directoryTimeout = 30 * time.Second

// New makes a manager. The directory is the operator's, like the relay:
// it is reached directly, not through the outbound policy for addresses
// that callers give (adapters/egress).
func New(c Config) *Manager {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if c.Roots != nil {
		transport.TLSClientConfig = &tls.Config{RootCAs: c.Roots, MinVersion: tls.VersionTLS12}
	}
	m := &autocert.Manager{
		Prompt:      autocert.AcceptTOS,
		Email:       c.Email,
		RenewBefore: c.RenewBefore,
		HostPolicy:  func(ctx context.Context, host string) error { return c.State.Allow(ctx, host) },
		Cache:       &cache{state: c.State, holder: c.Holder, renewBefore: c.RenewBefore},
		Client: &acme.Client{DirectoryURL: c.Directory,
			HTTPClient: &http.Client{Transport: transport, Timeout: directoryTimeout}},
	}
	return &Manager{m: m, defaultHost: c.DefaultHost}
}

// TLSConfig serves our certificates, and the CA's tls-alpn-01 challenges.
func (mg *Manager) TLSConfig() *tls.Config {
	c := mg.m.TLSConfig()
	c.GetCertificate = mg.GetCertificate
	c.MinVersion = tls.VersionTLS12
	return c
}

// GetCertificate is autocert's, with DefaultHost for a client that named
// no server.
func (mg *Manager) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if hello.ServerName == "" {
		named := *hello
		named.ServerName = mg.defaultHost
		hello = &named
	}
	return mg.m.GetCertificate(hello)
}

// HTTPHandler answers http-01 challenges and hands anything else to
// fallback.
func (mg *Manager) HTTPHandler(fallback http.Handler) http.Handler { return mg.m.HTTPHandler(fallback) }

// RedirectToHTTPS sends a GET or HEAD to the same host and path on the
// HTTPS port; anything else is told to use HTTPS.
func RedirectToHTTPS(httpsPort string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "Use HTTPS.", http.StatusBadRequest)
			return
		}
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		if httpsPort != "443" {
			host = net.JoinHostPort(host, httpsPort)
		} else if strings.Contains(host, ":") {
			host = "[" + host + "]" // an IPv6 literal
		}
		http.Redirect(w, r, "https://"+host+r.URL.RequestURI(), http.StatusMovedPermanently)
	})
}

// cache is autocert's Cache over State, with the leases.
type cache struct {
	state       State
	holder      string
	renewBefore time.Duration
}

// leaseWait is how often a read without the lease looks again.
const leaseWait = 500 * time.Millisecond

func (c *cache) Get(ctx context.Context, key string) ([]byte, error) {
	for {
		data, err := c.state.Get(ctx, key)
		switch {
		case err != nil && core.KindOf(err) != core.KindNotFound:
			return nil, err
		case err == nil && (!leased(key) || !c.due(data)):
			return data, nil
		case !leased(key):
			return nil, autocert.ErrCacheMiss
		}
		// autocert would go to the CA: only with the lease.
		mine, cerr := c.state.Claim(ctx, key, c.holder)
		if cerr != nil {
			return nil, cerr
		}
		if mine {
			if err != nil {
				return nil, autocert.ErrCacheMiss
			}
			return data, nil // due: autocert renews it and Puts the new one
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(leaseWait):
		}
	}
}

// Put stores data and, for a leased key, ends our lease: whatever the CA
// had to give is stored.
func (c *cache) Put(ctx context.Context, key string, data []byte) error {
	if err := c.state.Put(ctx, key, data); err != nil {
		return err
	}
	if leased(key) {
		return c.state.Release(ctx, key, c.holder)
	}
	return nil
}

func (c *cache) Delete(ctx context.Context, key string) error { return c.state.Delete(ctx, key) }

// leased reports whether autocert goes to the CA when key is missing: the
// account key and certificates; not the challenge tokens, which it stores
// itself (for the instance the CA reaches, which may be another).
func leased(key string) bool {
	return !strings.HasSuffix(key, "+token") && !strings.HasSuffix(key, "+http-01")
}

// due reports whether a stored certificate is in its renewal window, when
// autocert would ask the CA for a new one: RenewBefore before its expiry,
// else a third of its lifetime (at most 30 days), as autocert reckons. An
// entry that is no certificate (the account key) is never due.
func (c *cache) due(data []byte) bool {
	leaf, err := storedLeaf(data)
	if err != nil {
		return false
	}
	window := min(leaf.NotAfter.Sub(leaf.NotBefore)/3, 30*24*time.Hour)
	if c.renewBefore > 0 {
		window = min(c.renewBefore, 30*24*time.Hour)
	}
	return !time.Now().Before(leaf.NotAfter.Add(-window))
}

// storedLeaf is the first certificate of a cache entry (PEM: the private
// key, then the chain).
func storedLeaf(data []byte) (*x509.Certificate, error) {
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return nil, errors.New("no certificate")
		}
		if b.Type == "CERTIFICATE" {
			leaf, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("certificate: %w", err)
			}
			return leaf, nil
		}
	}
}
