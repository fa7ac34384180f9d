package web

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dsh-acp/dsh-acp/approval"
)

func TestPrivateDestinations(t *testing.T) {
	for ip, private := range map[string]bool{
		"127.0.0.1": true, "127.8.9.10": true, "::1": true, "::ffff:127.0.0.1": true, "0.0.0.0": true, "::": true,
		"169.254.169.254": true, "169.254.1.1": true, "fe80::1": true, "fd00:ec2::254": true, "100.100.100.200": true,
		"10.1.2.3": true, "172.16.0.1": true, "172.31.255.255": true, "192.168.1.1": true, "fc00::1": true, "fd12::1": true,
		"100.64.0.1": true, "64:ff9b::7f00:1": true, "224.0.0.1": true,
		"172.32.0.1": false, "8.8.8.8": false, "93.184.216.34": false, "2001:4860:4860::8888": false, "64:ff9b::808:808": false,
	} {
		assert.Equal(t, private, privateAddr(netip.MustParseAddr(ip)) != "", ip)
	}
	for name, private := range map[string]bool{
		"localhost": true, "LOCALHOST.": true, "app.localhost": true, "metadata.google.internal": true, "printer.local": true,
		"intranet": true, "router.lan": true, "nas.home.arpa": true,
		"example.com": false, "docs.example.org": false, "127.0.0.1": false,
	} {
		assert.Equal(t, private, privateName(name) != "", name)
	}
	assert.Equal(t, "https://example.com", originOf(mustURL(t, "HTTPS://Example.COM/x")).String())
	assert.Equal(t, "http://127.0.0.1:8080", originOf(mustURL(t, "http://127.0.0.1:8080/")).String())
	assert.NotEqual(t, originOf(mustURL(t, "http://h/")), originOf(mustURL(t, "https://h/")))
	assert.NotEqual(t, originOf(mustURL(t, "http://h:1/")), originOf(mustURL(t, "http://h:2/")))
}

// counted is a loopback test server that counts the connections made to it.
type counted struct {
	*httptest.Server
	conns atomic.Int32
}

func newCounted(t *testing.T, h http.HandlerFunc) *counted {
	c := &counted{}
	c.Server = httptest.NewUnstartedServer(h)
	c.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.conns.Add(1)
		}
	}
	c.Start()
	t.Cleanup(c.Close)
	return c
}

// decider answers each approval with decide's outcome, recording the
// reasons asked.
type decider struct {
	mu      sync.Mutex
	reasons []string
	decide  func(req approval.Request) approval.Outcome
}

func (d *decider) Answer(_ context.Context, _ string, req approval.Request) (approval.Outcome, bool, error) {
	d.mu.Lock()
	d.reasons = append(d.reasons, req.Reason)
	d.mu.Unlock()
	return d.decide(req), true, nil
}

func (d *decider) asked() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.reasons...)
}

// A loopback destination asks, saying what it is; refused, or with nobody
// to ask, no connection is opened; allowed, it is fetched.
func TestLoopbackAsksAndRefusedOpensNothing(t *testing.T) {
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("inside")) })
	no := &decider{decide: func(approval.Request) approval.Outcome { return approval.Rejected }}
	tools := New(Options{Approver: approval.NewService("ask", func() string { return "id" }, no)})
	out := exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/"))
	require.True(t, out.IsError)
	require.Len(t, no.asked(), 1)
	assert.Contains(t, no.asked()[0], "loopback")
	assert.Zero(t, srv.conns.Load())

	out = exec(t, New(Options{}), newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/"))
	require.True(t, out.IsError)
	assert.Contains(t, text(out), "refused")
	assert.Zero(t, srv.conns.Load())

	yes := &decider{decide: func(approval.Request) approval.Outcome { return approval.AllowedOnce }}
	tools = New(Options{Approver: approval.NewService("ask", func() string { return "id" }, yes)})
	out = exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(srv.URL+"/"))
	require.False(t, out.IsError, text(out))
	assert.Contains(t, text(out), "inside")
	assert.Equal(t, int32(1), srv.conns.Load())
}

// An approval covers one origin: a redirect from an approved origin to
// another port of the same host is asked like a first request, and
// refused, never connected to.
func TestRedirectHopIsAskedPerOrigin(t *testing.T) {
	b := newCounted(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("other port")) })
	a := newCounted(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, b.URL+"/x", http.StatusFound) })
	d := &decider{decide: func(req approval.Request) approval.Outcome {
		if strings.Contains(req.Reason, "the first request to "+a.URL+" ") {
			return approval.AllowedAlways
		}
		return approval.Rejected
	}}
	tools := New(Options{Approver: approval.NewService("ask", func() string { return "id" }, d)})
	out := exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON(a.URL+"/"))
	require.True(t, out.IsError, text(out))
	assert.Contains(t, text(out), "not followed")
	require.Len(t, d.asked(), 2, "the hop to another port asks")
	assert.Contains(t, d.asked()[1], b.URL)
	assert.Equal(t, int32(1), a.conns.Load())
	assert.Zero(t, b.conns.Load(), "the refused hop opened a connection")
}

// fakeNet is an injected resolver and dialer: names resolve as scripted
// (each lookup takes the next answer), and a dial to a scripted public
// address reaches a loopback server instead; every address dialled is
// recorded. No traffic leaves loopback.
type fakeNet struct {
	mu      sync.Mutex
	answers map[string][]string
	route   map[string]string // dialled address → loopback address
	dialled []string
}

func (n *fakeNet) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	as := n.answers[host]
	if len(as) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	ip := as[0]
	if len(as) > 1 {
		n.answers[host] = as[1:]
	}
	return []net.IPAddr{{IP: net.ParseIP(ip)}}, nil
}

func (n *fakeNet) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	n.dialled = append(n.dialled, addr)
	to, ok := n.route[addr]
	n.mu.Unlock()
	if !ok {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errUnroutable}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, to)
}

var errUnroutable = &net.AddrError{Err: "not routed in this test"}

func (n *fakeNet) dials() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.dialled...)
}

// A name checked as public that resolves to a private address when it is
// dialled (DNS rebinding) is refused at the dial; a public page that
// redirects to the metadata service has its hop asked, and refused, the
// metadata address is never dialled.
func TestPrivateAddressCheckedWhereDialled(t *testing.T) {
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/meta" {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
			return
		}
		_, _ = w.Write([]byte("public page"))
	})
	loop := strings.TrimPrefix(srv.URL, "http://")
	fn := &fakeNet{answers: map[string][]string{"rebind.example": {"93.184.216.34", "127.0.0.1"}, "public.example": {"93.184.216.34"}},
		route: map[string]string{"93.184.216.34:80": loop}}
	allowPublic := &decider{decide: func(req approval.Request) approval.Outcome {
		if strings.Contains(req.Reason, "machine or network") {
			return approval.Rejected
		}
		return approval.AllowedOnce
	}}
	tools := New(Options{Approver: approval.NewService("ask", func() string { return "id" }, allowPublic), Resolver: fn, Dialer: fn})

	out := exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON("http://rebind.example/"))
	require.True(t, out.IsError, text(out))
	assert.Contains(t, text(out), "refused to connect to 127.0.0.1:80")
	assert.Empty(t, fn.dials(), "the rebound address was dialled")

	out = exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON("http://public.example/"))
	require.False(t, out.IsError, text(out))
	assert.Contains(t, text(out), "public page")

	fn.answers["public.example"] = []string{"93.184.216.34"}
	out = exec(t, tools, newEnv(), "web_fetch", fetchArgsJSON("http://public.example/meta"))
	require.True(t, out.IsError, text(out))
	asked := allowPublic.asked()
	assert.Contains(t, asked[len(asked)-1], "cloud metadata")
	for _, d := range fn.dials() {
		assert.NotContains(t, d, "169.254.169.254")
	}

	// Without an approver, no private hop is followed either.
	fn.answers["public.example"] = []string{"93.184.216.34"}
	out = exec(t, New(Options{Resolver: fn, Dialer: fn}), newEnv(), "web_fetch", fetchArgsJSON("http://public.example/meta"))
	require.True(t, out.IsError, text(out))
	for _, d := range fn.dials() {
		assert.NotContains(t, d, "169.254.169.254")
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}
