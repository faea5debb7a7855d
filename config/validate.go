package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The checks on bots.yaml's values, run after decoding and defaults. Each
// problem is recorded against its key path; none stops the others.

var (
	botIDRE   = regexp.MustCompile(`^[a-z0-9_-]+$`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// validateBots checks the gateway section and every bot.
func validateBots(r *report, cfg *Config, o options) {
	validateGateway(r, &cfg.Gateway)
	validateShared(r, &cfg.Shared)
	validateGossip(r, &cfg.Shared.Gossip, cfg.Bots)
	ids := map[string]int{} // bot ID → index of its first use
	for i, b := range cfg.Bots {
		key := fmt.Sprintf("bots[%d].id", i)
		switch first, dup := ids[b.ID]; {
		case b.ID == "":
			r.errorf(key, "required")
		case !botIDRE.MatchString(b.ID):
			r.errorf(key, "%q is not a valid bot id: use only a-z, 0-9, _ and -", b.ID)
		case dup:
			r.errorf(key, "duplicate bot id %q (also bots[%d])", b.ID, first)
		default:
			ids[b.ID] = i
		}
	}
	validateNames(r, cfg.Bots)
	for i := range cfg.Bots {
		validateBot(r, cfg.Bots, i)
		runBrainChecks(r, o, &cfg.Bots[i].Brain, fmt.Sprintf("bots[%d].brain", i))
	}
}

// validateGateway checks the gateway section.
func validateGateway(r *report, g *Gateway) {
	if host, port, err := net.SplitHostPort(g.Listen); err != nil || !validPort(port) || strings.ContainsAny(host, " /") {
		r.errorf("gateway.listen", "%q is not a host:port address such as 127.0.0.1:8080", g.Listen)
	}
	validateDatabase(r, g)
	checkEnvName(r, "gateway.web.secret_env", g.Web.SecretEnv)
	for i, o := range g.Web.AllowedOrigins {
		if msg := checkOrigin(o); msg != "" {
			r.errorf(fmt.Sprintf("gateway.web.allowed_origins[%d]", i), "%s", msg)
		}
	}
	atLeast(r, "gateway.web.max_connections_per_ip", g.Web.MaxConnectionsPerIP, 0)
	checkRate(r, "gateway.web.max_messages_per_second_per_person", g.Web.MaxMessagesPerSecondPerPerson)
	checkRate(r, "gateway.web.max_messages_per_second_per_ip", g.Web.MaxMessagesPerSecondPerIP)
	d, c := g.Delegation, g.Crossbot
	atLeast(r, "gateway.delegation.max_depth", d.MaxDepth, 0)
	atLeast(r, "gateway.delegation.cooldown", d.Cooldown, 0)
	atLeast(r, "gateway.delegation.context_messages", d.ContextMessages, 0)
	atLeast(r, "gateway.delegation.timeout", d.Timeout, 1)
	atLeast(r, "gateway.crossbot.max_chain", c.MaxChain, 0)
	atLeast(r, "gateway.crossbot.cooldown", c.Cooldown, 0)
	atLeast(r, "gateway.crossbot.burst", c.Burst, 0)
	if !(c.ResponseChance >= 0 && c.ResponseChance <= 1) {
		r.errorf("gateway.crossbot.response_chance", "must be between 0 and 1, got %v", c.ResponseChance)
	}
	atLeast(r, "gateway.retention.anonymous", g.Retention.Anonymous, 0)
	atLeast(r, "gateway.retention.messages", g.Retention.Messages, 0)
}

// validateShared checks the shared section.
func validateShared(r *report, s *Shared) {
	atLeast(r, "shared.findings.inject", s.Findings.Inject, 0)
	if t := s.Insights.ConfidenceThreshold; !(t >= 0 && t <= 1) {
		r.errorf("shared.insights.confidence_threshold", "must be between 0 and 1, got %v", t)
	}
	atLeast(r, "shared.insights.limit", s.Insights.Limit, 0)
	c := s.Context
	atLeast(r, "shared.context.events", c.Events, 0)
	atLeast(r, "shared.context.entities", c.Entities, 0)
	atLeast(r, "shared.context.facts", c.Facts, 0)
	atLeast(r, "shared.context.chain", c.Chain, 0)
	if t := c.MinConfidence; !(t >= 0 && t <= 1) {
		r.errorf("shared.context.min_confidence", "must be between 0 and 1, got %v", t)
	}
}

// validateNames reports a name or alias that addresses two different bots,
// which would make mentions and triggers ambiguous.
func validateNames(r *report, bots []Bot) {
	owner := map[string]int{} // lower-cased id, name or alias → bot index
	for i, b := range bots {
		if _, taken := owner[strings.ToLower(b.ID)]; b.ID != "" && !taken {
			owner[strings.ToLower(b.ID)] = i
		}
	}
	claim := func(i int, key, name string) {
		lower := strings.ToLower(strings.TrimSpace(name))
		if first, ok := owner[lower]; ok && first != i {
			r.errorf(key, "%q already names bot %s", name, bots[first].ID)
			return
		}
		owner[lower] = i
	}
	for i, b := range bots {
		if first, ok := owner[strings.ToLower(b.ID)]; b.ID == "" || (ok && first != i) {
			continue // a missing or repeated ID is reported already
		}
		claim(i, fmt.Sprintf("bots[%d].name", i), b.Name)
		for j, a := range b.Aliases {
			key := fmt.Sprintf("bots[%d].aliases[%d]", i, j)
			if strings.TrimSpace(a) == "" {
				r.errorf(key, "must not be empty")
				continue
			}
			claim(i, key, a)
		}
	}
}

// validateBot checks bots[i] apart from its ID and names.
func validateBot(r *report, bots []Bot, i int) {
	b := &bots[i]
	key := fmt.Sprintf("bots[%d]", i)
	validateBrain(r, &b.Brain, key+".brain")
	validatePlatforms(r, &b.Platforms, key+".platforms")
	if s := b.Groups.SessionScope; s != ScopeUser && s != ScopeGroup {
		r.errorf(key+".groups.session_scope", "must be user or group, got %q", s)
	}
	for j, target := range b.Delegation.Allow {
		k := fmt.Sprintf("%s.delegation.allow[%d]", key, j)
		idx := slices.IndexFunc(bots, func(o Bot) bool { return o.ID == target })
		switch {
		case target == "*":
		case idx < 0:
			r.errorf(k, "%q is not a bot id%s", target, closestBot(target, bots))
		case idx == i:
			r.errorf(k, "a bot cannot delegate to itself")
		case b.Public:
			r.errorf(k, "bot %s is public and cannot delegate", b.ID)
		case bots[idx].Public:
			r.errorf(k, "bot %s is public and cannot be delegated to", target)
		}
	}
	for j, t := range b.Delegation.Triggers {
		if strings.Count(t, "{bot}") != 1 || strings.Count(t, "{task}") != 1 {
			r.errorf(fmt.Sprintf("%s.delegation.triggers[%d]", key, j),
				"%q must contain {bot} and {task} once each", t)
		}
	}
}

// closestBot suggests the bot ID nearest to an unknown one.
func closestBot(id string, bots []Bot) string {
	best, bestDist := "", 3
	for _, b := range bots {
		if d := editDistance(id, b.ID); d < bestDist {
			best, bestDist = b.ID, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// validatePlatforms checks a bot's platform settings.
func validatePlatforms(r *report, p *Platforms, key string) {
	if t := p.Telegram; t != nil {
		k := key + ".telegram"
		requireEnvName(r, k+".token_env", t.TokenEnv)
		checkURL(r, k+".api_url", t.APIURL, "http", "https")
		switch t.Mode {
		case ModePolling:
		case ModeWebhook:
			if t.Webhook.URL == "" {
				r.errorf(k+".webhook.url", "required when mode is webhook")
			}
		default:
			r.errorf(k+".mode", "must be polling or webhook, got %q", t.Mode)
		}
		checkURL(r, k+".webhook.url", t.Webhook.URL, "http", "https")
		checkEnvName(r, k+".webhook.secret_env", t.Webhook.SecretEnv)
	}
	if d := p.Discord; d != nil {
		k := key + ".discord"
		requireEnvName(r, k+".token_env", d.TokenEnv)
		checkURL(r, k+".api_url", d.APIURL, "http", "https")
		checkURL(r, k+".gateway_url", d.GatewayURL, "ws", "wss")
	}
}

// atLeast reports a number or duration below min.
func atLeast[T ~int | ~int64 | ~float64](r *report, key string, v, min T) {
	if v < min {
		if min == 0 {
			r.errorf(key, "must not be negative, got %v", v)
		} else {
			r.errorf(key, "must be positive, got %v", v)
		}
	}
}

// checkRate reports a rate per second that is negative or not a finite
// number (0 is allowed: no limit).
func checkRate(r *report, key string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		r.errorf(key, "must be a number of messages per second, 0 or more (0: no limit), got %v", v)
	}
}

// checkEnvName reports a name that cannot be an environment variable.
func checkEnvName(r *report, key, name string) {
	if name != "" && !envNameRE.MatchString(name) {
		r.errorf(key, "%q is not an environment variable name", name)
	}
}

// requireEnvName is checkEnvName for a key that must be set.
func requireEnvName(r *report, key, name string) {
	if name == "" {
		r.errorf(key, "required: the environment variable holding the secret")
		return
	}
	checkEnvName(r, key, name)
}

// checkURL reports a non-empty value that is not an absolute URL with one
// of the schemes.
func checkURL(r *report, key, raw string, schemes ...string) {
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || !slices.Contains(schemes, u.Scheme) {
		r.errorf(key, "%q is not a %s:// URL", raw, strings.Join(schemes, ":// or "))
	}
}

// checkOrigin returns why o is not "*" or scheme://host[:port], or "".
func checkOrigin(o string) string {
	if o == "*" {
		return ""
	}
	u, err := url.Parse(o)
	switch {
	case err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "":
		return fmt.Sprintf("%q is not an origin such as https://example.com or \"*\"", o)
	case u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#"):
		return fmt.Sprintf("%q is not an origin: only scheme://host[:port], with no path or trailing /", o)
	case u.Port() != "" && !validPort(u.Port()):
		return fmt.Sprintf("%q has an invalid port", o)
	}
	return ""
}

// validPort reports whether p is a TCP port number.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 0 && n <= math.MaxUint16
}
