package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"text/template"
)

// validateBrain checks a brain's kind and the keys of that kind. Keys of
// other kinds were already reported by the shape check.
func validateBrain(r *report, br *Brain, key string) {
	switch br.Kind {
	case "":
		r.errorf(key+".kind", "required: one of %s", strings.Join(brainKinds, ", "))
		return
	case KindScript:
		validateScript(r, br, key)
	case KindExec:
		validateExec(r, br, key)
	case KindOpenAI:
		validateOpenAI(r, br, key)
	default:
		r.errorf(key+".kind", "unknown brain kind %q: use one of %s", br.Kind, strings.Join(brainKinds, ", "))
		return
	}
	atLeast(r, key+".timeout", br.Timeout, 1)
}

// validateScript checks a script brain: rules whose match compiles and
// whose templates parse.
func validateScript(r *report, br *Brain, key string) {
	if len(br.Rules) == 0 && br.Default == "" {
		r.errorf(key, "a script brain needs rules or a default reply")
	}
	for i, rule := range br.Rules {
		k := fmt.Sprintf("%s.rules[%d]", key, i)
		if rule.Match == "" {
			r.errorf(k+".match", "required: a Go regular expression")
		} else if _, err := regexp.Compile(rule.Match); err != nil {
			r.errorf(k+".match", "invalid regular expression: %s",
				strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
		if rule.Reply == "" && len(rule.Artifacts) == 0 && len(rule.Actions) == 0 {
			r.errorf(k+".reply", "required unless the rule produces artifacts or takes actions")
		}
		checkTemplate(r, k+".reply", rule.Reply)
		for j, a := range rule.Artifacts {
			ak := fmt.Sprintf("%s.artifacts[%d]", k, j)
			if a.Name == "" {
				r.errorf(ak+".name", "required")
			}
			checkTemplate(r, ak+".content", a.Content)
		}
		for j, a := range rule.Actions {
			ak := fmt.Sprintf("%s.actions[%d]", k, j)
			name, args, ok := a.Name()
			switch {
			case !ok:
				r.errorf(ak, "an item names one action with its arguments, such as {post_finding: {text: '{{.Text}}', severity: high}}; this one names %d", len(a))
				continue
			case !actionNameRE.MatchString(name):
				r.errorf(ak, "%q is not an action name, such as post_finding", name)
				continue
			}
			for arg, text := range args {
				checkTemplate(r, ak+"."+name+"."+arg, string(text))
			}
		}
	}
	checkTemplate(r, key+".default", br.Default)
}

// actionNameRE is what an action's name looks like; which actions exist
// is checked where the registry is known (a BrainCheck).
var actionNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// ScriptTemplateFuncs names the helpers the script brain gives its
// templates (brains/script.FuncNames; a test in cmd/switchboard keeps the
// two lists equal). Validation knows their names, not their code.
var ScriptTemplateFuncs = []string{"join", "lower", "trim", "upper"}

// templateStubs lets templates that call the script helpers parse.
var templateStubs = func() template.FuncMap {
	m := template.FuncMap{}
	for _, n := range ScriptTemplateFuncs {
		m[n] = func(...any) string { return "" }
	}
	return m
}()

// checkTemplate reports text that does not parse as a Go text/template
// with the script brain's helpers.
func checkTemplate(r *report, key, text string) {
	if text == "" {
		return
	}
	if _, err := template.New(key).Funcs(templateStubs).Parse(text); err != nil {
		msg := strings.TrimPrefix(err.Error(), "template: "+key+":")
		r.errorf(key, "invalid template: line %s", msg)
	}
}

// validateExec checks an exec brain's command and environment names.
func validateExec(r *report, br *Brain, key string) {
	if len(br.Command) == 0 || strings.TrimSpace(br.Command[0]) == "" {
		r.errorf(key+".command", "required: the program and its arguments as a list")
	}
	// ResumeCommand defaults to Command, so it is only wrong on its own
	// when written as an empty list or with an empty program.
	if len(br.Command) > 0 && (len(br.ResumeCommand) == 0 || strings.TrimSpace(br.ResumeCommand[0]) == "") {
		r.errorf(key+".resume_command", "must name a program (omit it to reuse command)")
	}
	for i, name := range br.Env {
		k := fmt.Sprintf("%s.env[%d]", key, i)
		if name == "" {
			r.errorf(k, "must not be empty")
		}
		checkEnvName(r, k, name)
	}
	if msg := checkUserName(br.RunAs); msg != "" {
		r.errorf(key+".run_as", "%s", msg)
	}
}

// checkUserName accepts an empty run_as or one that can name a user: a
// user name or a numeric user ID, without spaces, control characters,
// ':' or '/', not starting with '-'. Whether the user exists is checked
// where the gateway runs, when the brain is built.
func checkUserName(name string) string {
	switch {
	case name == "":
		return ""
	case len(name) > 64:
		return "must be a user name or a numeric user ID, at most 64 characters"
	case strings.HasPrefix(name, "-"):
		return fmt.Sprintf("%q is not a user name: it starts with '-'", name)
	}
	for _, c := range name {
		if c <= ' ' || c == 0x7f || c == ':' || c == '/' || c == ',' {
			return fmt.Sprintf("%q is not a user name or a numeric user ID", name)
		}
	}
	return ""
}

// validateOpenAI checks an openai brain's server, model and limits.
func validateOpenAI(r *report, br *Brain, key string) {
	if br.BaseURL == "" {
		r.errorf(key+".base_url", "required, e.g. http://127.0.0.1:11434/v1")
	}
	checkURL(r, key+".base_url", br.BaseURL, "http", "https")
	checkAPIRoot(r, key+".base_url", br.BaseURL)
	if br.Model == "" {
		r.errorf(key+".model", "required")
	}
	checkEnvName(r, key+".api_key_env", br.APIKeyEnv)
	atLeast(r, key+".context_messages", br.ContextMessages, 0)
	atLeast(r, key+".max_tokens", br.MaxTokens, 0)
	if t := br.Temperature; t != nil && !(*t >= 0 && *t <= 2) {
		r.errorf(key+".temperature", "must be between 0 and 2, got %v", *t)
	}
}

// An openai brain posts to base_url + "/chat/completions", and nearly
// every OpenAI-compatible server serves that under a version: /v1
// (OpenAI, Ollama, llama.cpp, vLLM, LM Studio, Mistral, Together),
// /openai/v1 (Groq, Azure), /api/v1 (OpenRouter), /v1beta/openai
// (Gemini), /v1/openai (DeepInfra). A base_url without one is most
// often the server's address alone, and every turn would get a 404.
var (
	apiVersionRE = regexp.MustCompile(`^v\d+((alpha|beta)\d*)?$`)
	// versionlessAPIs are hosts whose documented base URL has no
	// version.
	versionlessAPIs = []string{"api.deepseek.com", "api.perplexity.ai", "models.github.ai"}
)

// checkAPIRoot warns about an openai base_url whose path does not end in
// an API version (or a known variant), or that names the
// chat-completions endpoint itself. It is a warning: a server may serve
// the API anywhere. Messages show the URL without user info, query or
// fragment, which may hold a secret.
func checkAPIRoot(r *report, key, raw string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return // checkURL has said why
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	shown, endpoint := u.String(), u.JoinPath("chat", "completions").String()
	path := strings.TrimRight(u.Path, "/")
	segs := strings.Split(path, "/")
	last, prev := segs[len(segs)-1], ""
	if len(segs) > 1 {
		prev = segs[len(segs)-2]
	}
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		u.Path = strings.TrimSuffix(path, "/chat/completions")
		r.warnf(key, "%q is the chat-completions endpoint itself; base_url is the API root, to which the brain adds /chat/completions (did you mean %s?)", shown, u.String())
	case apiVersionRE.MatchString(last), last == "openai" && apiVersionRE.MatchString(prev):
	case slices.Contains(versionlessAPIs, strings.ToLower(u.Hostname())):
	default:
		msg := fmt.Sprintf("%q does not end in an API version such as /v1, so requests go to %s, which most servers do not serve "+
			"(Ollama, llama.cpp, vLLM and OpenAI answer under /v1, Groq under /openai/v1, OpenRouter under /api/v1, Gemini under /v1beta/openai)",
			shown, endpoint)
		if path == "" {
			u.Path = "/v1"
			msg += fmt.Sprintf(" (did you mean %s?)", u.String())
		}
		r.warnf(key, "%s", msg)
	}
}
