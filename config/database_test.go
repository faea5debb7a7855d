package config

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestDatabaseKeys checks gateway.database and gateway.database_env: the
// SQLite default, PostgreSQL by a variable, and the refused combinations.
// No message may show the password written by mistake in the YAML.
func TestDatabaseKeys(t *testing.T) {
	tests := []struct {
		name    string
		gateway string
		key     string // the key of the expected error; "" for none
		msg     string
		path    string // DatabasePath when valid; relative to the dir
		source  string // DatabaseSource when valid, for database_env
	}{
		{name: "default", gateway: "listen: 127.0.0.1:8080", path: "switchboard.db"},
		{name: "sqlite path", gateway: "database: data/sb.db", path: "data/sb.db"},
		{name: "postgres by variable", gateway: "database_env: SB_DATABASE_URL", source: "$SB_DATABASE_URL"},
		{
			name: "both", gateway: "database: sb.db\n  database_env: SB_DATABASE_URL",
			key: "gateway.database_env", msg: "gateway.database and gateway.database_env are both set",
		},
		{
			name: "both, with a URL in YAML", gateway: "database_env: SB_DATABASE_URL\n  database: postgres://sb:s3cret@db.internal/sb",
			key: "gateway.database", msg: "carries a password",
		},
		{
			name: "bad variable name", gateway: "database_env: SB-DATABASE",
			key: "gateway.database_env", msg: `"SB-DATABASE" is not an environment variable name`,
		},
		{
			name: "postgres URL in YAML", gateway: "database: postgres://sb:s3cret@db.internal/sb",
			key: "gateway.database", msg: "must not be written in YAML: put the URL in an environment variable and name that variable in gateway.database_env",
		},
		{
			name: "postgresql URL in YAML", gateway: "database: PostgreSQL://sb:s3cret@db.internal/sb",
			key: "gateway.database", msg: "carries a password",
		},
		{
			name: "other URL", gateway: "database: mysql://sb:s3cret@db.internal/sb",
			key: "gateway.database", msg: `"mysql://sb:xxxxx@db.internal/sb" is a URL, not a SQLite file`,
		},
		{name: "sqlite URI", gateway: "database: 'file:///var/lib/sb.db?mode=rwc'", path: "file:///var/lib/sb.db?mode=rwc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeDir(t, "gateway:\n  "+tt.gateway+"\n"+minimalBots, minimalUsers)
			if tt.key == "" {
				cfg := mustLoad(t, dir)
				want := tt.path
				if want != "" && !strings.HasPrefix(want, "file:") {
					want = filepath.Join(cfg.Dir, want)
				}
				if got := cfg.DatabasePath(); got != want {
					t.Errorf("DatabasePath = %q, want %q", got, want)
				}
				if tt.source == "" {
					tt.source = want
				}
				if got := cfg.DatabaseSource(); got != tt.source {
					t.Errorf("DatabaseSource = %q, want %q", got, tt.source)
				}
				return
			}
			errs := loadErrors(t, dir)
			e := findError(t, errs, BotsFile, tt.key)
			line := 2
			if strings.Contains(tt.gateway, "\n") {
				line = 3 // the second key's
			}
			if !strings.Contains(e.Message, tt.msg) || e.Line != line {
				t.Errorf("error %v, want line %d and %q", e, line, tt.msg)
			}
			if strings.Contains(errs.Error(), "s3cret") {
				t.Errorf("the errors show the password: %v", errs)
			}
		})
	}
}

// TestPostgresURL checks how serve reads the variable database_env names:
// every refusal names the variable and none shows the password.
func TestPostgresURL(t *testing.T) {
	const name = "SB_DATABASE_URL"
	cfg := &Config{Dir: "/etc/sb", Gateway: Gateway{DatabaseEnv: name}}
	tests := []struct {
		name  string
		value string
		unset bool
		want  string // the URL returned, or "" for an error
		msg   string // what the error says
	}{
		{name: "url", value: "postgres://sb:s3cret@db.internal:5432/sb?sslmode=require", want: "postgres://sb:s3cret@db.internal:5432/sb?sslmode=require"},
		{name: "postgresql scheme", value: "postgresql://sb@db.internal/sb", want: "postgresql://sb@db.internal/sb"},
		{name: "spaces trimmed", value: " postgres://db.internal/sb\n", want: "postgres://db.internal/sb"},
		{name: "socket", value: "postgres:///sb?host=/run/postgresql", want: "postgres:///sb?host=/run/postgresql"},
		{name: "several hosts", value: "postgres://sb:s3cret@db1:5432,db2:5432/sb", want: "postgres://sb:s3cret@db1:5432,db2:5432/sb"},
		{name: "unset", unset: true, msg: "the environment variable SB_DATABASE_URL is not set"},
		{name: "empty", value: "", msg: "the environment variable SB_DATABASE_URL is empty"},
		{name: "blank", value: " \n", msg: "the environment variable SB_DATABASE_URL is empty"},
		{name: "other scheme", value: "mysql://sb:s3cret@db.internal/sb", msg: "$SB_DATABASE_URL is mysql://sb:xxxxx@db.internal/sb, not a postgres:// URL"},
		{name: "key-value form", value: "host=db.internal password=s3cret", msg: "$SB_DATABASE_URL is (a value that is not a URL), not a postgres:// URL"},
		{name: "no slashes", value: "postgres:sb:s3cret@db.internal", msg: "$SB_DATABASE_URL is postgres:(hidden), not a postgres:// URL"},
		// An unencoded / in the password ends the host early: url.Parse's
		// own error would quote it.
		{name: "unparsable", value: "postgres://sb:s3/cret@db.internal/sb", msg: "$SB_DATABASE_URL is not a URL"},
		{name: "unparsable port", value: "postgres://sb:s3cret@db.internal:x/sb", msg: "$SB_DATABASE_URL is not a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) {
				if k != name {
					t.Fatalf("looked up %s", k)
				}
				return tt.value, !tt.unset
			}
			got, err := cfg.PostgresURL(lookup)
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Fatalf("PostgresURL = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("PostgresURL = %q, want an error", got)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.msg) || !strings.Contains(msg, name) || strings.Contains(msg, "s3") {
				t.Errorf("error %q, want one naming %s, saying %q, without the password", msg, name, tt.msg)
			}
		})
	}
	sqlite := &Config{Dir: "/etc/sb", Gateway: Gateway{Database: "sb.db"}}
	if _, err := sqlite.PostgresURL(func(string) (string, bool) { return "postgres://h/db", true }); err == nil {
		t.Error("PostgresURL without database_env succeeded")
	}
}

// TestRedactURL checks what a message may show of a database URL.
func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://sb:s3cret@db.internal:5432/sb?sslmode=require", "postgres://sb:xxxxx@db.internal:5432/sb?sslmode=require"},
		{"postgres://sb@db.internal/sb", "postgres://sb@db.internal/sb"},
		{"postgres://sb:@db.internal/sb", "postgres://sb:xxxxx@db.internal/sb"},
		{"postgres://sb:p%40ss@db.internal/sb", "postgres://sb:xxxxx@db.internal/sb"},
		{"postgres://db.internal/sb?user=sb&password=s3cret", "postgres://db.internal/sb?password=xxxxx&user=sb"},
		{"postgres://db.internal/sb?sslpassword=s3cret&PASSWORD=s3cret", "postgres://db.internal/sb?PASSWORD=xxxxx&sslpassword=xxxxx"},
		{"postgres://db.internal/sb?password=s3%zzcret", "postgres://db.internal/sb?(hidden)"},
		{"postgres://sb:s3cret@db1:5432,db2:5432/sb", "postgres://sb:xxxxx@db1:5432,db2:5432/sb"},
		{"postgres://db.internal/sb#s3cret", "postgres://db.internal/sb"},
		{"postgres:sb:s3cret@db.internal", "postgres:(hidden)"},
		{"postgres://sb:s3/cret@db.internal/sb", "(a value that is not a URL)"},
		{"host=db.internal password=s3cret", "(a value that is not a URL)"},
		{"", "(a value that is not a URL)"},
		{"sb.db", "(a value that is not a URL)"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzRedactURL feeds arbitrary values, as an environment variable may
// hold: RedactURL never panics, and what it returns that parses as a URL
// has no password but xxxxx, in its user information or its query.
func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{
		"postgres://sb:s3cret@db.internal:5432/sb?sslmode=require",
		"postgres://db.internal/sb?password=s3cret&password=again",
		"postgres://sb:p%40ss@[::1]:5432/sb", "postgres:sb:s3cret@h", "postgres://%zz@h/",
		"postgres://sb:s3cret@h/db?password=%zz", "host=h password=p", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out := RedactURL(raw)
		u, err := url.Parse(out)
		if err != nil {
			return
		}
		if p, has := u.User.Password(); has && p != redacted {
			t.Fatalf("RedactURL(%q) = %q keeps the password %q", raw, out, p)
		}
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return
		}
		for k, vs := range q {
			if strings.Contains(strings.ToLower(k), "password") && (len(vs) != 1 || vs[0] != redacted) {
				t.Fatalf("RedactURL(%q) = %q keeps %s=%q", raw, out, k, vs)
			}
		}
	})
}
