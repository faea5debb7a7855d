package main

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestServeDatabaseEnv checks serve's start with gateway.database_env
// (SPEC §11): an unset, empty or malformed variable, or a server that
// cannot be reached, stops the start with an error naming it and the
// host, and no error shows the password.
func TestServeDatabaseEnv(t *testing.T) {
	const name = "SB_TEST_DATABASE_URL"
	bots := strings.Replace(testBots, "  database: test.db\n", "  database_env: "+name+"\n", 1)
	dir := writeConfigDir(t, bots)
	tests := []struct {
		name, value string
		unset       bool
		want        string
	}{
		{name: "unset", unset: true, want: "the environment variable " + name + " is not set"},
		{name: "empty", value: "", want: "the environment variable " + name + " is empty"},
		{name: "not postgres", value: "mysql://sb:s3cret@db.internal/sb", want: "$" + name + " is mysql://sb:xxxxx@db.internal/sb, not a postgres:// URL"},
		{name: "unparsable", value: "postgres://sb:s3/cret@db.internal/sb", want: "$" + name + " is not a URL"},
		{name: "unreachable", value: "postgres://sb:s3cret@127.0.0.1:1/sb?sslmode=disable", want: "$" + name + ": store: cannot reach the PostgreSQL server 127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(name, tt.value) // restored at cleanup
			if tt.unset {
				os.Unsetenv(name)
			}
			m := &Main{ConfigDir: dir, Listen: "127.0.0.1:0", Logger: testLogger(t)}
			err := m.Run(context.Background())
			if err == nil {
				m.Close()
				t.Fatal("serve started")
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || !strings.Contains(msg, "gateway.database_env") || strings.Contains(msg, "s3") {
				t.Errorf("error %q, want one naming gateway.database_env and saying %q, without the password", msg, tt.want)
			}
		})
	}
}
