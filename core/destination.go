package core

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The outbound-destination policy: every connection the server makes to a
// place a user named (IMAP sources, webhooks, the relay check) is held to
// it, so that a caller cannot use the server to reach into the network it
// runs in. The adapter that dials resolves a name once, checks every address
// here and dials the address it checked.

// DestinationClass names the kind of network an address belongs to; the
// zero value is a public address.
type DestinationClass string

const (
	DestinationPublic      DestinationClass = ""
	DestinationLoopback    DestinationClass = "loopback"
	DestinationPrivate     DestinationClass = "private"     // RFC 1918, unique local fc00::/7, site-local fec0::/10
	DestinationLinkLocal   DestinationClass = "link-local"  // 169.254.0.0/16, fe80::/10
	DestinationSharedCGNAT DestinationClass = "cgnat"       // 100.64.0.0/10 (RFC 6598)
	DestinationMulticast   DestinationClass = "multicast"   // 224.0.0.0/4, ff00::/8
	DestinationUnspecified DestinationClass = "unspecified" // 0.0.0.0/8, ::
	DestinationReserved    DestinationClass = "reserved"    // 240.0.0.0/4 and broadcast, benchmarking 198.18.0.0/15
	DestinationMetadata    DestinationClass = "metadata"    // cloud instance metadata services
)

// metadataAddrs are the cloud instance-metadata endpoints (AWS, GCP, Azure,
// OpenStack use 169.254.169.254; AWS's IPv6 one is fd00:ec2::254). They fall
// in refused ranges anyway; naming them makes the refusal say why.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("fd00:ec2::254"),
}

var refusedPrefixes = []struct {
	prefix netip.Prefix
	class  DestinationClass
}{
	{netip.MustParsePrefix("0.0.0.0/8"), DestinationUnspecified},
	{netip.MustParsePrefix("10.0.0.0/8"), DestinationPrivate},
	{netip.MustParsePrefix("100.64.0.0/10"), DestinationSharedCGNAT},
	{netip.MustParsePrefix("127.0.0.0/8"), DestinationLoopback},
	{netip.MustParsePrefix("169.254.0.0/16"), DestinationLinkLocal},
	{netip.MustParsePrefix("172.16.0.0/12"), DestinationPrivate},
	{netip.MustParsePrefix("192.0.0.0/24"), DestinationReserved}, // IETF protocol assignments
	{netip.MustParsePrefix("192.168.0.0/16"), DestinationPrivate},
	{netip.MustParsePrefix("198.18.0.0/15"), DestinationReserved},
	{netip.MustParsePrefix("224.0.0.0/4"), DestinationMulticast},
	{netip.MustParsePrefix("240.0.0.0/4"), DestinationReserved}, // includes 255.255.255.255
	{netip.MustParsePrefix("::/128"), DestinationUnspecified},
	{netip.MustParsePrefix("::1/128"), DestinationLoopback},
	{netip.MustParsePrefix("fc00::/7"), DestinationPrivate},
	{netip.MustParsePrefix("fe80::/10"), DestinationLinkLocal},
	{netip.MustParsePrefix("fec0::/10"), DestinationPrivate},
	{netip.MustParsePrefix("ff00::/8"), DestinationMulticast},
}

// Prefixes of IPv6 that carry an IPv4 address in their last 32 bits and
// reach it: IPv4-compatible (::a.b.c.d, deprecated), NAT64 (64:ff9b::/96).
// 6to4 (2002::/16) carries it in bits 16–48.
var (
	v4Compatible = netip.MustParsePrefix("::/96")
	nat64        = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour    = netip.MustParsePrefix("2002::/16")
)

// ClassifyDestination says which kind of network ip belongs to. An IPv6
// address that embeds an IPv4 one (mapped, compatible, NAT64, 6to4) is
// classified by the IPv4 address it reaches.
func ClassifyDestination(ip netip.Addr) DestinationClass {
	ip = ip.WithZone("")
	if v4, ok := embeddedIPv4(ip); ok {
		ip = v4
	}
	for _, m := range metadataAddrs {
		if ip == m {
			return DestinationMetadata
		}
	}
	for _, r := range refusedPrefixes {
		if r.prefix.Contains(ip) {
			return r.class
		}
	}
	return DestinationPublic
}

func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() {
		return ip, false
	}
	if ip.Is4In6() {
		return ip.Unmap(), true
	}
	b := ip.As16()
	switch {
	case ip == netip.IPv6Unspecified() || ip == netip.IPv6Loopback():
		return ip, false
	case v4Compatible.Contains(ip), nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return ip, false
}

// DestinationPolicy decides which addresses the server may connect to.
type DestinationPolicy struct {
	// AllowPrivate lets connections reach every address, for tests and
	// local development (CALLSIGN_SOURCES_ALLOW_PRIVATE).
	AllowPrivate bool
}

// DestinationError is a refused destination. Its message names the host and
// the kind of address, never anything a remote said.
type DestinationError struct {
	Host  string
	Addr  netip.Addr
	Class DestinationClass
}

func (e *DestinationError) Error() string {
	if e.Host == e.Addr.String() {
		return fmt.Sprintf("%s is a %s address, which the server does not connect to", e.Host, e.Class)
	}
	return fmt.Sprintf("%s resolves to %s, a %s address, which the server does not connect to", e.Host, e.Addr, e.Class)
}

// Check refuses ip unless it is public or the policy allows private
// addresses. host is the name the caller gave, for the error.
func (p DestinationPolicy) Check(host string, ip netip.Addr) error {
	if p.AllowPrivate {
		return nil
	}
	if c := ClassifyDestination(ip); c != DestinationPublic {
		return &DestinationError{Host: host, Addr: ip.WithZone(""), Class: c}
	}
	return nil
}

// CheckAll checks every address a name resolved to: one refused address
// refuses the name, since a dial may pick any of them.
func (p DestinationPolicy) CheckAll(host string, ips []netip.Addr) error {
	for _, ip := range ips {
		if err := p.Check(host, ip); err != nil {
			return err
		}
	}
	return nil
}

// HostIP reads host as an address the way a resolver would without asking
// the DNS: an IPv6 or dotted-quad literal, the shorthand numeric forms
// inet_aton accepts (2130706433, 0x7f.1, 017700000001, 127.1), or the
// "localhost" names (RFC 6761), which are loopback. IPv4-mapped IPv6 is
// returned as its IPv4 address. ok is false for a name the DNS must answer.
func HostIP(host string) (netip.Addr, bool) {
	h := strings.TrimSuffix(host, ".")
	if lower := strings.ToLower(h); lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
		return netip.AddrFrom4([4]byte{127, 0, 0, 1}), true
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Unmap(), true
	}
	return parseInetAton(h)
}

// parseInetAton parses inet_aton's notations: one to four parts separated
// by dots, each decimal, octal (leading 0) or hexadecimal (leading 0x); the
// last part fills the bytes the earlier ones left.
func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 || s == "" {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, part := range parts {
		base, digits := 10, part
		switch {
		case len(part) > 1 && (part[:2] == "0x" || part[:2] == "0X"):
			base, digits = 16, part[2:]
			if digits == "" { // "0x" alone is zero to inet_aton
				digits = "0"
			}
		case len(part) > 1 && part[0] == '0':
			base, digits = 8, part[1:]
		}
		if digits == "" || strings.ContainsAny(digits[:1], "+-") {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (8 * (3 - i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}
