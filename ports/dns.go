package ports

import (
	"context"
	"net"
)

// Resolver looks names up in the DNS. Its methods are those of
// *net.Resolver, and so are its errors: a *net.DNSError whose IsNotFound
// says the name has no record of that type (or does not exist at all), and
// whose Temporary() says no answer could be had (a timeout, a failing
// server); callers tell "missing" from "ask again later" by them.
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupMX(ctx context.Context, name string) ([]*net.MX, error)
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
	// LookupAddr finds the names of an address (PTR records).
	LookupAddr(ctx context.Context, addr string) ([]string, error)
}
