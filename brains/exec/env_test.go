package exec

import (
	"strings"
	"testing"
)

func TestChildEnvironment(t *testing.T) {
	t.Setenv("SWITCHBOARD_WEB_SECRET", "hunter2")
	t.Setenv("MATTY_TELEGRAM_TOKEN", "123:abc")
	t.Setenv("ANTHROPIC_API_KEY", "sk-passed")
	t.Setenv("LANG", "C.UTF-8")
	b := newBrain(t, Config{
		Command: fake("env"),
		Env:     []string{"ANTHROPIC_API_KEY", "SWITCHBOARD_UNSET_VAR", "ANTHROPIC_API_KEY"},
	})
	r := reply(t, b, turn("hi", ""))
	got := map[string]string{}
	for _, line := range strings.Split(r.Text, "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	if strings.Contains(r.Text, "hunter2") || strings.Contains(r.Text, "123:abc") {
		t.Errorf("a gateway secret reached the child:\n%s", r.Text)
	}
	if got["ANTHROPIC_API_KEY"] != "sk-passed" {
		t.Errorf("ANTHROPIC_API_KEY = %q, want it passed through", got["ANTHROPIC_API_KEY"])
	}
	if got["LANG"] != "C.UTF-8" {
		t.Errorf("LANG = %q, want the gateway's", got["LANG"])
	}
	if _, ok := got["SWITCHBOARD_UNSET_VAR"]; ok {
		t.Error("an unset variable was passed as empty")
	}
	allowed := map[string]bool{"PATH": true, "HOME": true, "LANG": true, "TMPDIR": true,
		"ANTHROPIC_API_KEY": true, "GORACE": true}
	for k := range got {
		if !allowed[k] {
			t.Errorf("the child sees %s, which is not on the allow-list", k)
		}
	}
}
