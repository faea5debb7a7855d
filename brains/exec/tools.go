package exec

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/switchboard-chat/switchboard/brains"
)

// Tools serves a turn's actions to the program while the turn runs: the
// gateway's MCP endpoint (SPEC §10.1). The brain declares what it needs
// and knows no HTTP server; the wiring gives it one.
type Tools interface {
	// Open makes a bearer token for one turn's bound actions and returns
	// the endpoint's URL, the token and the function that ends the
	// token, which the brain calls when the turn ends.
	Open(actions brains.Actions) (url, token string, end func())
}

// The names under which a program finds the endpoint of its turn.
const (
	// MCPConfigFile is written in the working directory for CLIs that
	// take an MCP configuration file (claude -p --mcp-config FILE).
	MCPConfigFile = "switchboard-mcp.json"
	// EnvMCPURL and EnvMCPToken are set in the program's environment.
	EnvMCPURL   = "SWITCHBOARD_MCP_URL"
	EnvMCPToken = "SWITCHBOARD_MCP_TOKEN"
)

// mcpConfig is the shape of MCPConfigFile that Claude Code and other
// agent CLIs read.
type mcpConfig struct {
	MCPServers map[string]mcpEntry `json:"mcpServers"`
}

type mcpEntry struct {
	Type    string            `json:"type"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// openTools opens the turn's endpoint when it has actions and the brain
// has tools: MCPConfigFile is written in dir (0600, the run_as user's)
// and the variables for the program's environment are returned. close
// removes the file and ends the token; it runs when the turn ends. A
// turn without actions gets neither, and a file a crashed turn left is
// removed, so that a program never finds a token of another turn.
func (b *Brain) openTools(log *slog.Logger, dir string, actions brains.Actions) (env []string, close func(), err error) {
	path := filepath.Join(dir, MCPConfigFile)
	if actions == nil || b.tools == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn("exec brain: a stale MCP configuration was not removed", "err", err)
		}
		return nil, func() {}, nil
	}
	url, token, end := b.tools.Open(actions)
	cfg, err := json.MarshalIndent(mcpConfig{MCPServers: map[string]mcpEntry{
		"switchboard": {Type: "http", URL: url, Headers: map[string]string{"Authorization": "Bearer " + token}},
	}}, "", "  ")
	if err == nil {
		err = writeFile(dir, MCPConfigFile, append(cfg, '\n'), b.account)
	}
	if err != nil {
		end()
		return nil, nil, err
	}
	close = func() {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			// The token is ended below: the file names a dead one.
			log.Warn("exec brain: the turn's MCP configuration was not removed", "err", err)
		}
		end()
	}
	return []string{EnvMCPURL + "=" + url, EnvMCPToken + "=" + token}, close, nil
}
