package config

import (
	"strconv"
	"strings"
	"testing"
)

// TestLoadErrors has one case per class of problem: each names the file,
// the key path and, where the key is in the file, its line.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		file string // the file under test; the other one is minimal
		yaml string
		key  string
		line int // 0: the error has no line
		msg  string
	}{
		{
			name: "yaml syntax",
			file: BotsFile,
			yaml: "gateway:\n\tlisten: 127.0.0.1:8080\n",
			line: 2, msg: "invalid YAML: found character that cannot start any token",
		},
		{
			name: "empty file",
			file: BotsFile, yaml: "",
			msg: "file is empty",
		},
		{
			name: "file truncated to whitespace",
			file: UsersFile, yaml: " \n\n",
			msg: "file is empty",
		},
		{
			name: "only comments",
			file: UsersFile, yaml: "# users: []\n",
			msg: "only comments",
		},
		{
			name: "top level not a mapping",
			file: BotsFile, yaml: "- id: a\n",
			line: 1, msg: "top level must be a mapping",
		},
		{
			name: "two documents",
			file: UsersFile, yaml: "users: []\n---\nusers: []\n",
			line: 2, msg: "second YAML document",
		},
		{
			name: "unknown top-level key",
			file: BotsFile, yaml: "gatway:\n  listen: 127.0.0.1:8080\n" + minimalBots,
			key: "gatway", line: 1, msg: "unknown key (did you mean gateway?)",
		},
		{
			name: "unknown nested key",
			file: BotsFile,
			yaml: minimalBots + "    platforms:\n      web: {}\n      slack: {token_env: X}\n",
			key:  "bots[0].platforms.slack", line: 6, msg: "unknown key",
		},
		{
			name: "key in the wrong case",
			file: BotsFile, yaml: "gateway:\n  Listen: 127.0.0.1:8080\n" + minimalBots,
			key: "gateway.Listen", line: 2, msg: "did you mean listen?",
		},
		{
			name: "duplicate key",
			file: BotsFile, yaml: "gateway:\n  listen: a:1\n  listen: b:2\n" + minimalBots,
			key: "gateway.listen", line: 3, msg: "duplicate key (first set on line 2)",
		},
		{
			name: "wrong type: string for integer",
			file: BotsFile, yaml: "gateway:\n  delegation:\n    max_depth: three\n" + minimalBots,
			key: "gateway.delegation.max_depth", line: 3, msg: `expected a whole number, got the string "three"`,
		},
		{
			name: "wrong type: number for duration",
			file: BotsFile, yaml: "gateway:\n  crossbot:\n    cooldown: 30\n" + minimalBots,
			key: "gateway.crossbot.cooldown", line: 3, msg: "expected a duration",
		},
		{
			name: "wrong type: mapping for list",
			file: BotsFile, yaml: "bots:\n  id: a\n",
			key: "bots", line: 2, msg: "expected a list, got a mapping",
		},
		{
			name: "wrong type: quoted bool",
			file: UsersFile, yaml: "defaults:\n  privacy:\n    invisible: \"yes\"\nusers: []\n",
			key: "defaults.privacy.invisible", line: 3, msg: "expected true or false",
		},
		{
			name: "missing bot id",
			file: BotsFile, yaml: minimalBots + "  - name: Nobody\n    brain: {kind: script, default: hi}\n",
			key: "bots[1].id", line: 4, msg: "required",
		},
		{
			name: "invalid bot id",
			file: BotsFile, yaml: "bots:\n  - id: Matty Atlas\n    brain: {kind: script, default: hi}\n",
			key: "bots[0].id", line: 2, msg: "not a valid bot id",
		},
		{
			name: "duplicate bot id",
			file: BotsFile, yaml: minimalBots + "  - id: a\n    brain: {kind: script, default: hi}\n",
			key: "bots[1].id", line: 4, msg: `duplicate bot id "a" (also bots[0])`,
		},
		{
			name: "alias naming another bot",
			file: BotsFile, yaml: minimalBots + "  - id: b\n    aliases: [A]\n    brain: {kind: script, default: hi}\n",
			key: "bots[1].aliases[0]", line: 5, msg: `"A" already names bot a`,
		},
		{
			name: "missing brain kind",
			file: BotsFile, yaml: "bots:\n  - id: a\n    brain:\n      default: hi\n",
			key: "bots[0].brain.kind", line: 3, msg: "required",
		},
		{
			name: "unknown brain kind",
			file: BotsFile, yaml: "bots:\n  - id: a\n    brain:\n      kind: llm\n",
			key: "bots[0].brain.kind", line: 4, msg: `unknown brain kind "llm"`,
		},
		{
			name: "key of another brain kind",
			file: BotsFile, yaml: "bots:\n  - id: a\n    brain:\n      kind: script\n      default: hi\n      command: [x]\n",
			key: "bots[0].brain.command", line: 6, msg: "not a key of brain kind script",
		},
		{
			name: "script match not a regexp",
			file: BotsFile, yaml: "bots:\n  - id: a\n    brain:\n      kind: script\n      rules:\n        - match: '(?i)^(hi'\n          reply: hello\n",
			key: "bots[0].brain.rules[0].match", line: 6, msg: "invalid regular expression: missing closing )",
		},
		{
			name: "script reply not a template",
			file: BotsFile, yaml: "bots:\n  - id: a\n    brain:\n      kind: script\n      rules:\n        - match: hi\n          reply: 'Hi {{.User.Name}'\n",
			key: "bots[0].brain.rules[0].reply", line: 7, msg: "invalid template",
		},
		{
			name: "script default not a template",
			file: BotsFile, yaml: "bots:\n  - id: a\n    brain:\n      kind: script\n      default: '{{if .Text}}'\n",
			key: "bots[0].brain.default", line: 5, msg: "invalid template",
		},
		{
			name: "script artifact content not a template",
			file: BotsFile, yaml: "bots:\n  - id: a\n    brain:\n      kind: script\n      rules:\n        - match: x\n          reply: ok\n          artifacts:\n            - name: a.txt\n              content: '{{nosuchfunc}}'\n",
			key: "bots[0].brain.rules[0].artifacts[0].content", line: 10, msg: `function "nosuchfunc" not defined`,
		},
		{
			name: "exec without command",
			file: BotsFile, yaml: "bots:\n  - id: a\n    brain:\n      kind: exec\n      timeout: 1m\n",
			key: "bots[0].brain.command", line: 3, msg: "required",
		},
		{
			name: "exec run_as not a user name",
			file: BotsFile, yaml: "bots:\n  - id: a\n    brain:\n      kind: exec\n      command: [x]\n      run_as: 'bad user'\n",
			key: "bots[0].brain.run_as", line: 6, msg: `"bad user" is not a user name`,
		},
		{
			name: "exec run_as a flag",
			file: BotsFile, yaml: "bots:\n  - id: a\n    brain:\n      kind: exec\n      command: [x]\n      run_as: -u0\n",
			key: "bots[0].brain.run_as", line: 6, msg: "starts with '-'",
		},
		{
			name: "run_as on a script brain",
			file: BotsFile, yaml: "bots:\n  - id: a\n    brain:\n      kind: script\n      default: hi\n      run_as: nobody\n",
			key: "bots[0].brain.run_as", line: 6, msg: "not a key of brain kind script",
		},
		{
			name: "openai without base_url",
			file: BotsFile, yaml: "bots:\n  - id: a\n    brain:\n      kind: openai\n      model: m\n",
			key: "bots[0].brain.base_url", line: 3, msg: "required",
		},
		{
			name: "brain timeout not positive",
			file: BotsFile, yaml: "bots:\n  - id: a\n    brain:\n      kind: script\n      default: hi\n      timeout: 0s\n",
			key: "bots[0].brain.timeout", line: 6, msg: "must be positive",
		},
		{
			name: "allow names no bot",
			file: BotsFile, yaml: minimalBots + "    delegation:\n      allow: [b, aa]\n",
			key: "bots[0].delegation.allow[1]", line: 5, msg: `"aa" is not a bot id (did you mean a?)`,
		},
		{
			name: "trigger without {task}",
			file: BotsFile, yaml: minimalBots + "    delegation:\n      triggers: ['tell {bot} now']\n",
			key: "bots[0].delegation.triggers[0]", line: 5, msg: "must contain {bot} and {task}",
		},
		{
			name: "session scope",
			file: BotsFile, yaml: minimalBots + "    groups:\n      session_scope: channel\n",
			key: "bots[0].groups.session_scope", line: 5, msg: "must be user or group",
		},
		{
			name: "telegram mode",
			file: BotsFile, yaml: minimalBots + "    platforms:\n      telegram:\n        token_env: T\n        mode: push\n",
			key: "bots[0].platforms.telegram.mode", line: 7, msg: "must be polling or webhook",
		},
		{
			name: "telegram webhook without url",
			file: BotsFile, yaml: minimalBots + "    platforms:\n      telegram:\n        token_env: T\n        mode: webhook\n",
			key: "bots[0].platforms.telegram.webhook.url", line: 5, msg: "required when mode is webhook",
		},
		{
			name: "telegram without token_env",
			file: BotsFile, yaml: minimalBots + "    platforms:\n      telegram: {}\n",
			key: "bots[0].platforms.telegram.token_env", line: 5, msg: "required",
		},
		{
			name: "env name",
			file: BotsFile, yaml: minimalBots + "    platforms:\n      discord:\n        token_env: $TOKEN\n",
			key: "bots[0].platforms.discord.token_env", line: 6, msg: "not an environment variable name",
		},
		{
			name: "negative count",
			file: BotsFile, yaml: "gateway:\n  delegation:\n    max_depth: -1\n" + minimalBots,
			key: "gateway.delegation.max_depth", line: 3, msg: "must not be negative, got -1",
		},
		{
			name: "negative duration",
			file: BotsFile, yaml: "gateway:\n  delegation:\n    cooldown: -5s\n" + minimalBots,
			key: "gateway.delegation.cooldown", line: 3, msg: "must not be negative, got -5s",
		},
		{
			name: "negative retention",
			file: BotsFile, yaml: "gateway:\n  retention:\n    messages: -1d\n" + minimalBots,
			key: "gateway.retention.messages", line: 3, msg: "must not be negative, got -24h0m0s",
		},
		{
			name: "retention not a duration",
			file: BotsFile, yaml: "gateway:\n  retention:\n    anonymous: 30 days\n" + minimalBots,
			key: "gateway.retention.anonymous", line: 3, msg: `expected a duration such as "30s", "5m", "6h" or "30d"`,
		},
		{
			name: "a mapping of too many keys",
			file: BotsFile, yaml: "gateway:\n  web:\n    secret_env: X\n" + strings.Repeat("    k: 1\n", 1001) + minimalBots,
			line: 3, msg: "a mapping of 1002 keys; at most 1000 are allowed in one mapping",
		},
		{
			name: "response chance above 1",
			file: BotsFile, yaml: "gateway:\n  crossbot:\n    response_chance: 1.5\n" + minimalBots,
			key: "gateway.crossbot.response_chance", line: 3, msg: "between 0 and 1",
		},
		{
			name: "response chance NaN",
			file: BotsFile, yaml: "gateway:\n  crossbot:\n    response_chance: .nan\n" + minimalBots,
			key: "gateway.crossbot.response_chance", line: 3, msg: "between 0 and 1",
		},
		{
			name: "negative burst",
			file: BotsFile, yaml: "gateway:\n  crossbot:\n    burst: -5s\n" + minimalBots,
			key: "gateway.crossbot.burst", line: 3, msg: "must not be negative",
		},
		{
			name: "seed that is not a whole number",
			file: BotsFile, yaml: "gateway:\n  crossbot:\n    seed: 1.5\n" + minimalBots,
			key: "gateway.crossbot.seed", line: 3, msg: "expected a whole number",
		},
		{
			name: "enabled that is not a bool",
			file: BotsFile, yaml: "gateway:\n  crossbot:\n    enabled: \"no\"\n" + minimalBots,
			key: "gateway.crossbot.enabled", line: 3, msg: "expected true or false",
		},
		{
			name: "negative connection cap",
			file: BotsFile, yaml: "gateway:\n  web:\n    max_connections_per_ip: -1\n" + minimalBots,
			key: "gateway.web.max_connections_per_ip", line: 3, msg: "must not be negative, got -1",
		},
		{
			name: "negative message rate",
			file: BotsFile, yaml: "gateway:\n  web:\n    max_messages_per_second_per_person: -0.5\n" + minimalBots,
			key: "gateway.web.max_messages_per_second_per_person", line: 3, msg: "0 or more (0: no limit), got -0.5",
		},
		{
			name: "infinite message rate",
			file: BotsFile, yaml: "gateway:\n  web:\n    max_messages_per_second_per_ip: .inf\n" + minimalBots,
			key: "gateway.web.max_messages_per_second_per_ip", line: 3, msg: "0 or more (0: no limit), got +Inf",
		},
		{
			name: "message rate as a string",
			file: BotsFile, yaml: "gateway:\n  web:\n    max_messages_per_second_per_ip: \"2\"\n" + minimalBots,
			key: "gateway.web.max_messages_per_second_per_ip", line: 3, msg: "a number",
		},
		{
			name: "allowed origin with a path",
			file: BotsFile, yaml: "gateway:\n  web:\n    allowed_origins: ['*', https://example.com/]\n" + minimalBots,
			key: "gateway.web.allowed_origins[1]", line: 3, msg: "no path or trailing /",
		},
		{
			name: "allowed origin without scheme",
			file: BotsFile, yaml: "gateway:\n  web:\n    allowed_origins: [example.com]\n" + minimalBots,
			key: "gateway.web.allowed_origins[0]", line: 3, msg: "not an origin",
		},
		{
			name: "secure_cookies not a bool",
			file: BotsFile, yaml: "gateway:\n  web:\n    secure_cookies: \"yes\"\n" + minimalBots,
			key: "gateway.web.secure_cookies", line: 3, msg: "expected true or false",
		},
		{
			name: "listen not host:port",
			file: BotsFile, yaml: "gateway:\n  listen: localhost\n" + minimalBots,
			key: "gateway.listen", line: 2, msg: "not a host:port address",
		},
		{
			name: "identity claimed by two users",
			file: UsersFile,
			yaml: "users:\n  - id: user-a\n    identities: [web-a, telegram-1]\n  - id: user-b\n    identities: [telegram-1]\n",
			key:  "users[1].identities[0]", line: 5, msg: `"telegram-1" is already claimed by user user-a (users[0].identities[1])`,
		},
		{
			name: "duplicate user id",
			file: UsersFile, yaml: "users:\n  - id: user-a\n  - id: user-a\n",
			key: "users[1].id", line: 3, msg: `duplicate user id "user-a"`,
		},
		{
			name: "identity not a platform ID",
			file: UsersFile, yaml: "users:\n  - id: user-a\n    identities:\n      - bryan\n",
			key: "users[0].identities[0]", line: 4, msg: "not a platform ID",
		},
		{
			name: "telegram identity must be numeric",
			file: UsersFile, yaml: "users:\n  - id: user-a\n    identities: [telegram-bryan]\n",
			key: "users[0].identities[0]", line: 3, msg: "not a platform ID",
		},
		{
			name: "unknown key in users.yaml",
			file: UsersFile, yaml: "users:\n  - id: user-a\n    identity: [web-a]\n",
			key: "users[0].identity", line: 3, msg: "unknown key (did you mean identities?)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bots, users := minimalBots, minimalUsers
			if tt.file == BotsFile {
				bots = tt.yaml
			} else {
				users = tt.yaml
			}
			errs := loadErrors(t, writeDir(t, bots, users))
			e := findError(t, errs, tt.file, tt.key)
			if e.Line != tt.line {
				t.Errorf("line = %d, want %d (%v)", e.Line, tt.line, e)
			}
			if !strings.Contains(e.Message, tt.msg) {
				t.Errorf("message = %q, want it to contain %q", e.Message, tt.msg)
			}
			// The formatted error starts with file, line and key.
			prefix := tt.file
			if tt.line > 0 {
				prefix += ":" + strconv.Itoa(tt.line)
			}
			if tt.key != "" {
				prefix += ": " + tt.key
			}
			if s := e.Error(); !strings.HasPrefix(s, prefix+": ") {
				t.Errorf("Error() = %q, want prefix %q", s, prefix+": ")
			}
		})
	}
}

func TestRunAsLoads(t *testing.T) {
	for _, v := range []string{"nobody", `"1000"`, "bot-runner"} {
		cfg := mustLoad(t, writeDir(t, "bots:\n  - id: e\n    brain: {kind: exec, command: [cat], run_as: "+v+"}\n", "users: []\n"))
		if got, want := cfg.Bots[0].Brain.RunAs, strings.Trim(v, `"`); got != want {
			t.Errorf("run_as %s loaded as %q", v, got)
		}
	}
}
