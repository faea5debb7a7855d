package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/switchboard-chat/switchboard/delegation"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
)

// The terminal commands (switchboard chat, send, conv; SPEC §9) speak the
// widget's protocol over the same /ws, dialled with the admin token in
// an Authorization header and ?as=cli-<name>. Their connections are the
// web adapter's connections with another platform name: CLI is the
// gateway's "cli" platform, a view of the same Adapter that sends to and
// types in the cli chats. One connection path, one frame code.

// cliPattern is what ?as= may be: "cli-" and a name of letters, digits
// and . _ @ - (no ':', which separates a private chat ID's parts, and no
// space).
var cliPattern = regexp.MustCompile(`^cli-[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)

// ValidCLIName reports whether id is a terminal person's platform ID
// that /ws accepts in ?as=.
func ValidCLIName(id string) bool { return cliPattern.MatchString(id) }

// CLI errors; each is answered with HTTP 401 (or 400) before the upgrade.
var (
	errCLIToken   = errors.New("as needs the admin token in an Authorization: Bearer header (SWITCHBOARD_ADMIN_TOKEN)")
	errCLIName    = errors.New("as must be cli-<name>: letters, digits, . _ @ - after cli-, at most 64")
	errCLINoAs    = errors.New("the admin token speaks for a terminal person: add ?as=cli-<name>")
	errCLIAndWeb  = errors.New("as cannot be combined with user, sig or token")
	errNoAdminKey = errors.New("as refused: the gateway has no admin token")
)

// SetAdminToken sets the token that lets a /ws dial speak as a terminal
// person (SPEC §9). Empty refuses every such dial.
func (a *Adapter) SetAdminToken(token string) {
	a.adminToken.Store(&token)
}

// cliRequest reports whether r is a terminal's dial: it has ?as= or an
// Authorization header.
func cliRequest(r *http.Request) bool {
	return r.URL.Query().Has("as") || r.Header.Get("Authorization") != ""
}

// identifyCLI authenticates a terminal's dial: the admin token, compared
// in constant time, and a valid cli-<name> in ?as=. It returns the
// status to refuse with along with the error.
func (a *Adapter) identifyCLI(r *http.Request) (visitor, int, error) {
	q := r.URL.Query()
	as := q.Get("as")
	if q.Has("user") || q.Has("sig") || q.Has("token") {
		return visitor{}, http.StatusBadRequest, errCLIAndWeb
	}
	want := ""
	if p := a.adminToken.Load(); p != nil {
		want = *p
	}
	got := bearer(r.Header.Get("Authorization"))
	switch {
	case want == "":
		return visitor{}, http.StatusUnauthorized, errNoAdminKey
	case got == "" || !sameToken(got, want):
		return visitor{}, http.StatusUnauthorized, errCLIToken
	case !q.Has("as"):
		return visitor{}, http.StatusBadRequest, errCLINoAs
	case !ValidCLIName(as):
		return visitor{}, http.StatusBadRequest, errCLIName
	}
	return visitor{platformID: as, platform: gateway.PlatformCLI, verified: true}, 0, nil
}

// sameToken compares SHA-256 digests in constant time, as the admin API
// does, so neither the token nor its length shows in the timing.
func sameToken(got, want string) bool {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// bearer is the credentials of an Authorization header whose scheme is
// Bearer in any case, or "".
func bearer(h string) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// CLI is the gateway's "cli" platform: the terminal connections of an
// Adapter. The Adapter's Run serves them; CLI's Run only waits.

type CLI struct{ a *Adapter }

var (
	_ gateway.Platform          = (*CLI)(nil)
	_ gateway.Typer             = (*CLI)(nil)
	_ gateway.DelegationWatcher = (*CLI)(nil)
	_ gateway.PrivateChatter    = (*CLI)(nil)
	_ outbox.ParkLimiter        = (*CLI)(nil)
)

// CLI returns the adapter's terminal platform; register it with the
// gateway next to the adapter.
func (a *Adapter) CLI() *CLI { return &CLI{a: a} }

// Name implements gateway.Platform.
func (p *CLI) Name() string { return gateway.PlatformCLI }

// Run implements gateway.Platform. The terminal connections are the
// Adapter's, which its own Run serves and closes; this waits for ctx.
func (p *CLI) Run(ctx context.Context, _ gateway.Host) error {
	<-ctx.Done()
	return nil
}

// Send implements gateway.Platform: as the web's Send, to the terminal
// connections in the chat. A private message with no terminal connected
// waits in the outbox for the person's next dial.
func (p *CLI) Send(ctx context.Context, m outbox.Entry) (string, error) {
	return p.a.Send(ctx, m)
}

// MaxParked implements outbox.ParkLimiter as the web does.
func (p *CLI) MaxParked() time.Duration { return undeliveredKeep }

// Typing implements gateway.Typer.
func (p *CLI) Typing(ctx context.Context, bot, chatID string) error {
	return p.a.typing(gateway.PlatformCLI, bot, chatID)
}

// PrivateChat implements gateway.PrivateChatter: a terminal person's
// chat with a bot is named after both and needs no opening, as on the
// web. (The gateway asks only for a cli identity the person spoke from.)
func (p *CLI) PrivateChat(_ context.Context, bot, platformID string) (string, error) {
	if !strings.HasPrefix(platformID, "cli-") {
		return "", fmt.Errorf("cli: %q is not a terminal identity", platformID)
	}
	return gateway.PrivateChatID(platformID, bot), nil
}

// DelegationChanged implements gateway.DelegationWatcher for the
// person's terminal connections.
func (p *CLI) DelegationChanged(ref delegation.Ref, platformIDs []string) {
	p.a.delegationChanged(ref, platformIDs, gateway.PlatformCLI)
}
