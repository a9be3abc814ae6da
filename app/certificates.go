package app

import (
	"context"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Certificates is the state of certificates by ACME, kept in the store so
// that every instance on one database serves the same certificates: the
// values are sealed by the vault's cipher (they hold private keys), and a
// lease per name lets one instance at a time ask the certificate authority.
type Certificates struct {
	base
	store   ports.CertificateStore
	domains *Domains
	cipher  ports.Cipher
	// hosts always have a certificate: the base URL's host and the MX host.
	hosts []string
}

// Allow says whether host may have a certificate: one of the service's
// own hosts, or the MTA-STS host of a custom domain that receives mail
// here. Anything else is NotFound.
func (c *Certificates) Allow(ctx context.Context, host string) error {
	domain, ok := core.CertificateHost(host, c.hosts)
	if ok {
		return nil
	}
	if domain != "" {
		if _, err := c.domains.MTASTSPolicy(ctx, host); !isNotFound(err) {
			return err
		}
	}
	return core.NotFound("No certificate is served for %s.", host)
}

// Get is the value stored under key, opened; NotFound when there is none.
func (c *Certificates) Get(ctx context.Context, key string) ([]byte, error) {
	sealed, err := c.store.CertificateEntry(ctx, key)
	if err != nil {
		return nil, err
	}
	return c.cipher.Open(sealed, certificateAAD(key))
}

// Put seals data and stores it under key.
func (c *Certificates) Put(ctx context.Context, key string, data []byte) error {
	sealed, err := c.cipher.Seal(data, certificateAAD(key))
	if err != nil {
		return err
	}
	return c.store.PutCertificateEntry(ctx, key, sealed, c.clock.Now())
}

// Delete forgets key.
func (c *Certificates) Delete(ctx context.Context, key string) error {
	return c.store.DeleteCertificateEntry(ctx, key)
}

// Claim takes or renews holder's lease on key for core.CertificateLease,
// and reports whether holder has it.
func (c *Certificates) Claim(ctx context.Context, key, holder string) (bool, error) {
	now := c.clock.Now()
	return c.store.ClaimCertificateLease(ctx, key, holder, now, now.Add(core.CertificateLease))
}

// Release ends holder's lease on key.
func (c *Certificates) Release(ctx context.Context, key, holder string) error {
	return c.store.ReleaseCertificateLease(ctx, key, holder)
}

// certificateAAD binds a sealed value to its key: a value copied under
// another name fails to open.
func certificateAAD(key string) []byte { return aad("acme_cache", "value", key) }
