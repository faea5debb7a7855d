package main

import (
	"net"
	"net/url"
)

// mcpURL is the /mcp endpoint as an exec brain's program reaches it: the
// gateway's own listener, on this machine. A listener on every address
// (0.0.0.0, ::, or a bare :port) is reached on the loopback address;
// one on a given address, at that address.
func mcpURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		host, port = addr.String(), ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: "/mcp"}
	return u.String()
}
