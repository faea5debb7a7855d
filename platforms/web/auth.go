package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/switchboard-chat/switchboard/gateway"
)

// webUserPattern is what a signed-in user's ID may look like; it becomes
// the platform ID "web-<user>".
var webUserPattern = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,128}$`)

// Auth errors; each is answered with HTTP 401 before the upgrade.
var (
	errNoSecret   = errors.New("user and sig given but the web secret is not configured (gateway.web.secret_env is unset or empty)")
	errBadSig     = errors.New("bad signature for user")
	errBadUser    = errors.New("user is not a valid web user ID")
	errBadToken   = errors.New("bad resume token")
	errHalfSigned = errors.New("user and sig must be given together")
)

// Sign returns the signature a page passes as sig for user: lowercase hex
// HMAC-SHA256(secret, user).
func Sign(secret []byte, user string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(user))
	return hex.EncodeToString(mac.Sum(nil))
}

// anonPrefix begins every anonymous visitor's platform ID.
const anonPrefix = "web-anon-"

// visitor is who a connection speaks for.
type visitor struct {
	platformID string
	// platform is the gateway platform the connection speaks on: web, or
	// cli for the terminal commands (cli.go).
	platform string
	// token resumes an anonymous identity; empty for signed-in users.
	token    string
	verified bool
}

// identify authenticates a /ws request (SPEC §3 web identities): user+sig
// for a signed-in user, token to resume an anonymous one, nothing for a new
// anonymous visitor.
func identify(q url.Values, secret, tokenKey []byte) (visitor, error) {
	user, sig, token := q.Get("user"), q.Get("sig"), q.Get("token")
	switch {
	case user != "" || sig != "":
		if user == "" || sig == "" {
			return visitor{}, errHalfSigned
		}
		if len(secret) == 0 {
			return visitor{}, errNoSecret
		}
		// "anon-" is reserved for anonymous visitors' IDs.
		if !webUserPattern.MatchString(user) || strings.HasPrefix(user, "anon-") {
			return visitor{}, errBadUser
		}
		if !hmac.Equal([]byte(strings.ToLower(sig)), []byte(Sign(secret, user))) {
			return visitor{}, errBadSig
		}
		return visitor{platformID: "web-" + user, platform: gateway.PlatformWeb, verified: true}, nil
	case token != "":
		id, ok := openToken(tokenKey, token)
		if !ok {
			return visitor{}, errBadToken
		}
		return visitor{platformID: id, platform: gateway.PlatformWeb, token: token}, nil
	default:
		var b [12]byte
		rand.Read(b[:])
		id := anonPrefix + hex.EncodeToString(b[:])
		return visitor{platformID: id, platform: gateway.PlatformWeb, token: sealToken(tokenKey, id)}, nil
	}
}

// sealToken makes a resume token for an anonymous platform ID:
// base64url(id) "." base64url(HMAC(key, id)). It needs no server state and
// stays valid across restarts because the key is stored.
func sealToken(key []byte, platformID string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("resume:" + platformID))
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(platformID)) + "." + enc.EncodeToString(mac.Sum(nil))
}

// openToken checks a token made by sealToken and returns its platform ID.
func openToken(key []byte, token string) (string, bool) {
	idPart, _, ok := strings.Cut(token, ".")
	if !ok {
		return "", false
	}
	id, err := base64.RawURLEncoding.DecodeString(idPart)
	if err != nil || !strings.HasPrefix(string(id), anonPrefix) {
		return "", false
	}
	if !hmac.Equal([]byte(token), []byte(sealToken(key, string(id)))) {
		return "", false
	}
	return string(id), true
}

// originAllowed is the Origin check: no Origin header (not a browser),
// the same host as the request, or an entry of allowed ("*" allows any).
func originAllowed(r *http.Request, allowed []string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(strings.TrimRight(a, "/"), origin) {
			return true
		}
	}
	return false
}
