package orchestrator

import "net/netip"

// RefusedNets are the ranges the box's outbound traffic (a sandbox's, a webhook's) may not reach
// unless the operator opens them: private (10/8, 172.16/12, 192.168/16), CGNAT (100.64/10),
// link-local (a cloud's instance metadata at 169.254.169.254 among them), IPv4 multicast, unique
// local (fc00::/7), IPv6 link-local and multicast. Networks beside the host (a VPC, other
// containers and pods) live there. The host's own addresses are refused besides these.
var RefusedNets = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("fc00::/7"), netip.MustParsePrefix("fe80::/10"), netip.MustParsePrefix("ff00::/8"),
}
