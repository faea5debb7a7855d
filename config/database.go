package config

import (
	"fmt"
	"net/url"
	"strings"
)

// The database is named by one of two keys (SPEC §11): gateway.database, a
// SQLite file, or gateway.database_env, the environment variable holding a
// PostgreSQL URL. A URL carries a password, so it never appears in YAML,
// and no message built here shows one.

// redacted replaces a password in RedactURL's result.
const redacted = "xxxxx"

// validateDatabase checks gateway.database and gateway.database_env. It
// runs after defaults, which leave Database empty when DatabaseEnv is set.
func validateDatabase(r *report, g *Gateway) {
	checkEnvName(r, "gateway.database_env", g.DatabaseEnv)
	if g.DatabaseEnv != "" && g.Database != "" {
		r.errorf("gateway.database_env", "gateway.database and gateway.database_env are both set: "+
			"use database for a SQLite file or database_env for PostgreSQL, not both")
	}
	switch {
	case isPostgresURL(g.Database):
		r.errorf("gateway.database", "holds a postgres:// URL, which carries a password and must not be written in YAML: "+
			"put the URL in an environment variable and name that variable in gateway.database_env")
	case strings.Contains(g.Database, "://") && !strings.HasPrefix(g.Database, "file:"):
		r.errorf("gateway.database", "%q is a URL, not a SQLite file: for PostgreSQL name an environment variable holding the URL in gateway.database_env", RedactURL(g.Database))
	}
}

// isPostgresURL reports whether s starts with a PostgreSQL URL scheme.
func isPostgresURL(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// PostgresURL returns the PostgreSQL URL in the environment variable that
// gateway.database_env names, read with lookup (os.LookupEnv in serve),
// with surrounding spaces trimmed. An unset or empty variable, or a value
// that is not a postgres:// (or postgresql://) URL, is an error that names
// the variable, and the host when one can be read, but never the
// password. The host may be empty, as in libpq: postgres:///db?host=/run/postgresql
// reaches a local server by its socket. It is an error to call it when
// database_env is not set.
func (c *Config) PostgresURL(lookup func(string) (string, bool)) (string, error) {
	name := c.Gateway.DatabaseEnv
	if name == "" {
		return "", fmt.Errorf("gateway.database_env is not set: the store is the SQLite file %s", c.DatabasePath())
	}
	raw, ok := lookup(name)
	raw = strings.TrimSpace(raw)
	switch {
	case !ok:
		return "", fmt.Errorf("gateway.database_env: the environment variable %s is not set; it must hold the database's URL, postgres://USER:PASSWORD@HOST:PORT/DATABASE", name)
	case raw == "":
		return "", fmt.Errorf("gateway.database_env: the environment variable %s is empty; it must hold the database's URL, postgres://USER:PASSWORD@HOST:PORT/DATABASE", name)
	}
	// url.Parse's own error quotes the whole value: it is not shown.
	if _, err := url.Parse(raw); err != nil {
		return "", fmt.Errorf("gateway.database_env: $%s is not a URL; it must be postgres://USER:PASSWORD@HOST:PORT/DATABASE, with special characters in the password percent-encoded", name)
	}
	if !isPostgresURL(raw) {
		return "", fmt.Errorf("gateway.database_env: $%s is %s, not a postgres:// URL", name, RedactURL(raw))
	}
	return raw, nil
}

// RedactURL returns raw, a URL, fit for a message or a log: a password in
// its user information, and the value of every query parameter whose name
// contains "password" (libpq's password and sslpassword), are replaced by
// xxxxx. What cannot be parsed as a URL is not shown at all.
func RedactURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" {
		// A relative reference may be libpq's "host=… password=…".
		return "(a value that is not a URL)"
	}
	if u.Opaque != "" {
		// scheme:user:password@host, without the //, is opaque to url.Parse.
		return u.Scheme + ":(hidden)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), redacted)
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = "(hidden)"
		} else {
			for k := range q {
				if strings.Contains(strings.ToLower(k), "password") {
					q[k] = []string{redacted}
				}
			}
			u.RawQuery = q.Encode()
		}
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}
