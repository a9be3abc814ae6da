// Package egress is the one way out for connections to places a user named
// (IMAP sources, webhooks): it resolves the name once, holds every address
// to core's outbound-destination policy, and dials an address it checked,
// so a DNS answer that changes between the check and the dial (rebinding)
// cannot lead the connection elsewhere.
package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"

	"github.com/callsign/callsign/core"
)

// Resolver finds a name's addresses; *net.Resolver and the resolver adapter
// (ports.Resolver) are ones.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Dialer connects under a policy. Its zero value is not usable: use New.
type Dialer struct {
	policy   core.DestinationPolicy
	resolver Resolver
	net      net.Dialer
}

// New makes a dialer that resolves through r (nil means the system's) and
// holds every connection to policy.
func New(policy core.DestinationPolicy, r Resolver) *Dialer {
	if r == nil {
		r = net.DefaultResolver
	}
	return &Dialer{policy: policy, resolver: r}
}

// Resolve returns host's addresses when the policy allows every one of
// them. A host written as an address, in any notation a resolver accepts
// (core.HostIP), is not looked up. Errors: *core.DestinationError for a
// refusal, *net.DNSError when the name has no address.
func (d *Dialer) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, ok := core.HostIP(host); ok {
		return []netip.Addr{ip}, d.policy.Check(host, ip)
	}
	found, err := d.resolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	addrs := make([]netip.Addr, 0, len(found))
	for _, a := range found {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			addrs = append(addrs, ip.Unmap())
		}
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no address", Name: host, IsNotFound: true}
	}
	return addrs, d.policy.CheckAll(host, addrs)
}

// DialContext connects to address ("host:port") over network ("tcp",
// "tcp4", "tcp6"): it resolves the host once, refuses it if any of its
// addresses is refused, and tries the checked addresses in order.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, &net.AddrError{Err: "invalid port", Addr: address}
	}
	addrs, err := d.Resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, ip := range addrs {
		if network == "tcp4" && !ip.Is4() || network == "tcp6" && !ip.Is6() {
			continue
		}
		conn, err := d.net.DialContext(ctx, network, netip.AddrPortFrom(ip, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, &net.AddrError{Err: "no address of the network " + network, Addr: host}
	}
	return nil, errors.Join(errs...)
}
