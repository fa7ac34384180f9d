package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
)

// Resolver looks host names up (net.Resolver; tests inject their own).
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Dialer connects to an address that is already an IP and a port
// (net.Dialer; tests inject their own).
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// origin is what a web approval covers: a scheme, a host and a port.
type origin struct{ scheme, host, port string }

// originOf returns u's origin, its port made explicit.
func originOf(u *url.URL) origin {
	o := origin{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), port: u.Port()}
	if o.port == "" {
		o.port = map[string]string{"http": "80", "https": "443"}[o.scheme]
	}
	return o
}

// String shows the origin as a URL prefix, the scheme's default port
// left out.
func (o origin) String() string {
	host := o.host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if (o.scheme == "http" && o.port == "80") || (o.scheme == "https" && o.port == "443") {
		return o.scheme + "://" + host
	}
	return o.scheme + "://" + host + ":" + o.port
}

// hostPort is the address a connection to the origin dials.
func (o origin) hostPort() string { return net.JoinHostPort(o.host, o.port) }

// approvals are the origins allowed, for a session or for one fetch; an
// origin allowed as a private destination may also be dialled at a
// private address.
type approvals struct {
	mu sync.Mutex
	ok map[origin]bool // origin → allowed as private
}

func (a *approvals) allowed(o origin) (ok, private bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	private, ok = a.ok[o]
	return ok, private
}

func (a *approvals) allow(o origin, private bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ok == nil {
		a.ok = map[origin]bool{}
	}
	a.ok[o] = a.ok[o] || private
}

// privateDial reports whether an approval lets hostPort be dialled at a
// private address.
func (a *approvals) privateDial(hostPort string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for o, private := range a.ok {
		if private && o.hostPort() == hostPort {
			return true
		}
	}
	return false
}

// metadata are the cloud metadata services' addresses.
var metadata = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("169.254.170.2"), netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("192.0.0.192"), netip.MustParseAddr("fd00:ec2::254"),
}

// privateRanges are the ranges a web page has no business reaching, with
// what each is.
var privateRanges = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified address (this machine)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address (this machine)"},
	{netip.MustParsePrefix("::1/128"), "a loopback address (this machine)"},
	{netip.MustParsePrefix("::/128"), "an unspecified address (this machine)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private network address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private network address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private network address"},
	{netip.MustParsePrefix("fc00::/7"), "a private network address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "a protocol-assignment address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking network address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
}

// nat64 is the well-known NAT64 prefix, whose last 32 bits are an IPv4
// address.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// privateAddr says what kind of private destination ip is, or "".
func privateAddr(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	for _, m := range metadata {
		if ip == m {
			return "a cloud metadata address"
		}
	}
	for _, r := range privateRanges {
		if r.prefix.Contains(ip) {
			return r.what
		}
	}
	return ""
}

// privateName says what kind of private destination a host name is by
// its name alone (localhost and the names only a local network resolves),
// or "".
func privateName(host string) string {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	switch {
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return "a name of this machine"
	case host == "metadata" || strings.HasPrefix(host, "metadata."):
		return "a cloud metadata name"
	case !strings.Contains(host, "."):
		return "a local network name"
	}
	for _, s := range []string{".local", ".internal", ".lan", ".home.arpa", ".intranet", ".corp", ".localdomain"} {
		if strings.HasSuffix(host, s) {
			return "a local network name"
		}
	}
	return ""
}

// lookup returns the addresses of host (a literal address is itself).
func (f *Fetch) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	ips, err := f.opts.Resolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		if a, ok := netip.AddrFromSlice(ip.IP); ok {
			out = append(out, a.Unmap())
		}
	}
	return out, nil
}

// privateDestination says why o is a private destination, by its name or
// by any address it resolves to, or "" (also when it does not resolve:
// the dial will fail, or be checked again).
func (f *Fetch) privateDestination(ctx context.Context, o origin) string {
	if why := privateName(o.host); why != "" {
		return why
	}
	ips, _ := f.lookup(ctx, o.host)
	for _, ip := range ips {
		if why := privateAddr(ip); why != "" {
			if ip.String() != o.host {
				why += " (" + o.host + " resolves to " + ip.String() + ")"
			}
			return why
		}
	}
	return ""
}

// blockedError is a connection refused to a private address.
type blockedError struct {
	addr, why string
}

func (e *blockedError) Error() string {
	return "refused to connect to " + e.addr + ": it is " + e.why + ", and this destination was not approved as one"
}

// dialer returns the DialContext of one fetch: it resolves the host itself
// and connects to an address only if it is public, or the origin was
// approved as a private destination (for the session or this fetch); the
// address actually connected to is checked again by the dialer's Control
// hook, so no rebinding between the check and the connect gets through.
func (f *Fetch) dialer(scope *approvals) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		hostPort := net.JoinHostPort(strings.ToLower(strings.TrimSuffix(host, ".")), port)
		privateOK := f.opts.AllowPrivate || f.origins.privateDial(hostPort) || scope.privateDial(hostPort)
		if why := privateName(host); why != "" && !privateOK {
			return nil, &blockedError{addr: addr, why: why}
		}
		ips, err := f.lookup(ctx, host)
		if err != nil {
			return nil, err
		}
		d := f.opts.Dialer
		if d == nil {
			d = &net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return err
				}
				if why := privateAddr(ap.Addr()); why != "" && !privateOK {
					return &blockedError{addr: address, why: why}
				}
				return nil
			}}
		}
		errs := []error{}
		for _, ip := range ips {
			target := net.JoinHostPort(ip.String(), port)
			if why := privateAddr(ip); why != "" && !privateOK {
				errs = append(errs, &blockedError{addr: target, why: why})
				continue
			}
			c, err := d.DialContext(ctx, network, target)
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
		}
		if len(errs) == 0 {
			return nil, fmt.Errorf("no address for %s", host)
		}
		return nil, errors.Join(errs...)
	}
}
