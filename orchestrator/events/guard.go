package events

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// Resolver looks a host name up (*net.Resolver implements it).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

func (s *Service) resolver() Resolver {
	if s.Resolver != nil {
		return s.Resolver
	}
	return net.DefaultResolver
}

// maxURL bounds a webhook URL's length.
const maxURL = 2048

// checkURL checks a webhook URL as it is registered: http or https, a host, no credentials or
// fragment, and (unless AllowPrivate) a host whose every address is public.
func (s *Service) checkURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	switch {
	case len(raw) > maxURL:
		return orchestrator.Errorf(orchestrator.EINVALID, "url is %d characters; at most %d", len(raw), maxURL)
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return orchestrator.Errorf(orchestrator.EINVALID, "url must be an absolute http or https URL such as https://hooks.example.com/guilds, got %q", raw)
	case u.User != nil:
		return orchestrator.Errorf(orchestrator.EINVALID, "url must not carry credentials (user:password@); the receiver checks the Guilds-Signature header made with the secret instead")
	case u.Fragment != "":
		return orchestrator.Errorf(orchestrator.EINVALID, "url must not have a #fragment")
	}
	_, err = s.addresses(ctx, u.Hostname())
	return err
}

// addresses resolves host and returns its addresses when every one may be reached: a host that
// resolves to this box or to a refused range (orchestrator.RefusedNets, loopback, unspecified) is
// refused unless AllowPrivate, naming the address and the way out.
func (s *Service) addresses(ctx context.Context, host string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if addrs, err = s.resolver().LookupNetIP(lctx, "ip", host); err != nil || len(addrs) == 0 {
			return nil, orchestrator.Errorf(orchestrator.EINVALID, "webhook host %q does not resolve (%v); use a name this box can look up", host, err)
		}
	}
	if s.AllowPrivate {
		return addrs, nil
	}
	own := ownAddrs()
	for _, a := range addrs {
		if why := refused(a.Unmap(), own); why != "" {
			return nil, orchestrator.Errorf(orchestrator.EINVALID, "webhook host %q resolves to %s, %s: refused, since a webhook must not reach this box or the networks beside it; point it at a public address (an admin may set GUILDS_WEBHOOK_ALLOW_PRIVATE=true for receivers on a private network)", host, a, why)
		}
	}
	return addrs, nil
}

// refused says why a may not be reached ("" when it may).
func refused(a netip.Addr, own map[netip.Addr]bool) string {
	switch {
	case a.IsLoopback():
		return "a loopback address of this box"
	case a.IsUnspecified() || (a.Is4() && a.As4()[0] == 0):
		return "an unspecified address (this box)"
	case own[a]:
		return "an address of this box"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address"
	}
	for _, p := range orchestrator.RefusedNets {
		if p.Contains(a) {
			return "in the refused range " + p.String() + " (private, CGNAT, link-local, unique-local or multicast)"
		}
	}
	return ""
}

// ownAddrs are the addresses of this host's interfaces.
func ownAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	as, err := net.InterfaceAddrs()
	if err != nil {
		return out
	}
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out[ip.Unmap()] = true
			}
		}
	}
	return out
}

// client is the deliveries' HTTP client: no proxy, no redirects followed (a 3xx is a failed
// attempt), and connections only to addresses checked at the moment of the attempt (a name that
// resolved to a public address at registration and to a private one now, a DNS rebinding, is
// refused), dialled by address so that nothing resolves the name again between check and connect.
func (s *Service) client() *http.Client {
	if s.Client != nil {
		return s.Client
	}
	s.clientOnce.Do(func() {
		dialer := &net.Dialer{Timeout: AttemptTimeout, KeepAlive: 30 * time.Second}
		tr := &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				host, port, err := net.SplitHostPort(addr)
				if err != nil {
					return nil, err
				}
				addrs, err := s.addresses(ctx, host)
				if err != nil {
					return nil, err
				}
				var last error
				for _, a := range addrs {
					c, err := dialer.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
					if err == nil {
						return c, nil
					}
					last = err
				}
				return nil, fmt.Errorf("connect to %s: %w", host, last)
			},
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   AttemptTimeout,
			ResponseHeaderTimeout: AttemptTimeout,
		}
		s.http = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	})
	return s.http
}
