// Package openai is the brain that talks to an OpenAI-compatible
// chat-completions server: Ollama, llama.cpp's server, vLLM, LM Studio,
// OpenAI itself, and the many hosted services that copy its API.
//
// Each turn is one POST to {BaseURL}/chat/completions with the prompt
// from package prompt (the system blocks first, then the kept history and
// the new message), asking for a streamed answer and accepting a plain
// JSON one from servers that ignore "stream". 429 and 5xx answers and
// connection failures are retried with exponential backoff and jitter,
// honouring Retry-After, within the turn's timeout. The turn's actions
// (SPEC §10.1: delegate, post_finding, …) are offered as function tools
// made from their schemas; the model's calls are carried out through the
// turn's bound actions, whose results go back to it as tool messages
// until it answers.
package openai

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/brains/prompt"
)

// Defaults for zero Config fields.
const (
	DefaultTimeout   = 2 * time.Minute
	DefaultRetryMax  = 4
	DefaultRetryBase = 500 * time.Millisecond
	DefaultRetryCap  = 30 * time.Second
)

// Config is an openai brain's settings.
type Config struct {
	// BaseURL is the API root, ending in /v1 for most servers:
	// http://127.0.0.1:11434/v1 (Ollama), https://api.openai.com/v1.
	BaseURL string
	// Model is the model name sent with each request.
	Model string
	// APIKey is the key itself (resolved from api_key_env by the caller),
	// sent as a bearer token; empty sends none.
	APIKey string
	// Timeout bounds one turn, retries and waits included; zero means
	// DefaultTimeout.
	Timeout time.Duration
	// ContextMessages is the most history messages sent; 0 sends what
	// the gateway passes.
	ContextMessages int
	// TokenBudget is the estimated token budget of the whole prompt
	// (prompt.Options.TokenBudget); 0 means none.
	TokenBudget int
	// Temperature is sent when set.
	Temperature *float64
	// MaxTokens is sent as max_tokens when positive.
	MaxTokens int
	// HTTPClient makes the requests; nil means a client of the brain's
	// own without a timeout (the turn's context bounds each request) that
	// keeps up to maxIdlePerHost connections to the server open between
	// turns.
	HTTPClient *http.Client
	// Logger receives retries and failures; nil means slog.Default().
	Logger *slog.Logger
	// Retry tunes retries of failed requests.
	Retry Retry
}

// LogValue shows cfg without its API key.
func (c Config) LogValue() slog.Value {
	key := ""
	if c.APIKey != "" {
		key = "REDACTED"
	}
	return slog.GroupValue(
		slog.String("base_url", withoutSecrets(c.BaseURL)),
		slog.String("model", c.Model),
		slog.String("api_key", key),
		slog.Duration("timeout", c.Timeout),
	)
}

// withoutSecrets is raw without the parts of a URL that may hold
// secrets: user info, query and fragment.
func withoutSecrets(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(not a URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return u.String()
}

// Retry is the retry policy for 429, 5xx and connection failures.
type Retry struct {
	// Max is the most retries after the first attempt; 0 means
	// DefaultRetryMax and a negative value disables retries.
	Max int
	// Base is the first backoff; it doubles each retry, up to Cap. Zero
	// values mean DefaultRetryBase and DefaultRetryCap.
	Base, Cap time.Duration
}

// Brain answers turns through a chat-completions server. It is safe for
// concurrent use.
type Brain struct {
	// endpoint is where requests go; shownURL is endpoint as errors and
	// logs name it, without user info, query or fragment, which may hold
	// secrets.
	endpoint    string
	shownURL    string
	model       string
	apiKey      string
	timeout     time.Duration
	window      int
	budget      int
	temperature *float64
	maxTokens   int
	client      *http.Client
	log         *slog.Logger
	retry       Retry

	// noTools is set once the server refuses tools, so later turns do not
	// offer them again.
	noTools atomic.Bool

	// sleep waits between attempts and jitter spreads backoffs; tests
	// replace them to run without waiting or chance.
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func(d time.Duration) time.Duration
}

var _ brains.Brain = (*Brain)(nil)

// New checks cfg and returns a brain. It makes no request: a server that
// is down at start only fails the turns made while it is.
func New(cfg Config) (*Brain, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai brain: base_url %q is not an http(s) URL", cfg.BaseURL)
	}
	// The path is joined, so a query (Azure's api-version) stays a query.
	endpoint := u.JoinPath("chat", "completions")
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai brain: model is empty")
	}
	b := &Brain{
		endpoint:    endpoint.String(),
		shownURL:    withoutSecrets(endpoint.String()),
		model:       cfg.Model,
		apiKey:      cfg.APIKey,
		timeout:     cfg.Timeout,
		window:      cfg.ContextMessages,
		budget:      cfg.TokenBudget,
		temperature: cfg.Temperature,
		maxTokens:   cfg.MaxTokens,
		client:      cfg.HTTPClient,
		log:         cfg.Logger,
		retry:       cfg.Retry,
		sleep:       sleep,
		jitter:      jitter,
	}
	if b.timeout <= 0 {
		b.timeout = DefaultTimeout
	}
	if b.client == nil {
		// Go's default transport keeps two idle connections per host:
		// with more turns than that in flight, most requests would dial
		// the server anew.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns, t.MaxIdleConnsPerHost = maxIdlePerHost, maxIdlePerHost
		b.client = &http.Client{Transport: t}
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.retry.Max == 0 {
		b.retry.Max = DefaultRetryMax
	}
	if b.retry.Base <= 0 {
		b.retry.Base = DefaultRetryBase
	}
	if b.retry.Cap <= 0 {
		b.retry.Cap = DefaultRetryCap
	}
	return b, nil
}

// Reply asks the model to answer t. The turn's actions (t.Actions) are
// offered as function tools; the model's tool calls are carried out
// through them and their results (or errors) sent back as tool messages,
// and the conversation goes on until the model answers without calling
// tools, at most maxToolRounds requests that call them. The reply's text
// is what the model said in every round. An answer with no text whose
// tool calls all failed, an empty answer, a malformed response, a
// refused request and running out of time (which wraps
// context.DeadlineExceeded) are errors. Errors name the URL called
// ("openai: POST http://127.0.0.1:11434/v1/chat/completions: server
// answered 404 …") and carry the server's own message, but never the API
// key, nor the URL's user info or query.
func (b *Brain) Reply(ctx context.Context, t brains.Turn) (brains.Reply, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	log := b.log.With("brain", "openai", "bot", t.Bot.ID, "session", t.SessionID, "model", b.model)

	var specs []brains.ActionSpec
	if t.Actions != nil && !b.noTools.Load() {
		specs = t.Actions.Specs()
	}
	opts := prompt.Options{ContextMessages: b.window, TokenBudget: b.budget, DelegateTool: offers(specs, "delegate")}
	msgs, tools := messages(prompt.Build(t, opts)), toolsOf(specs)
	var said []string
	acted, calls := 0, 0
	for round := 1; ; round++ {
		ans, err := b.complete(ctx, log, b.request(msgs, tools))
		if errors.Is(err, errToolsUnsupported) && round == 1 && len(tools) > 0 {
			// Small local models often lack tool support; the bot can
			// still hand work over by writing a trigger.
			log.Warn("server refused tools; continuing without them", "err", err)
			b.noTools.Store(true)
			opts.DelegateTool, tools = false, nil
			msgs = messages(prompt.Build(t, opts))
			ans, err = b.complete(ctx, log, b.request(msgs, nil))
		}
		if err != nil {
			if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("%w: %w", err, ctx.Err())
			}
			return brains.Reply{}, err
		}
		text := strings.TrimSpace(stripThinking(ans.content))
		if text != "" {
			said = append(said, text)
		}
		if len(ans.calls) == 0 || len(tools) == 0 {
			break
		}
		if round == maxToolRounds {
			log.Warn("the model still calls tools after the last round; answering with what it said", "rounds", round)
			break
		}
		more, ok := runCalls(ctx, log, t.Actions, ans.content, ans.calls, round)
		msgs = append(msgs, more...)
		acted, calls = acted+ok, calls+len(ans.calls)
	}
	text := strings.Join(said, "\n\n")
	switch {
	case text == "" && calls > 0 && acted == 0:
		return brains.Reply{}, fmt.Errorf("openai: POST %s: the model answered only with tool calls that failed", b.shownURL)
	case text == "" && acted == 0:
		return brains.Reply{}, fmt.Errorf("openai: POST %s: %w", b.shownURL, brains.ErrEmptyReply)
	}
	// A turn that acted (handed work on, say) may have nothing to say.
	return brains.Reply{Text: text}, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxIdlePerHost is how many idle connections to its server a brain
// keeps open.
const maxIdlePerHost = 256

// jitter is "equal jitter": a random duration in [d/2, d], so clients
// that failed together do not retry together.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}
