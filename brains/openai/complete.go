package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// StatusError is a response with a non-2xx status.
type StatusError struct {
	// URL is the URL the request went to, without user info or query.
	URL  string
	Code int
	// Message is the server's error message, or the start of its body.
	Message string
}

// Error names the request, the status and the server's message:
// "POST http://127.0.0.1:11434/chat/completions: server answered 404
// Not Found: 404 page not found".
func (e *StatusError) Error() string {
	return fmt.Sprintf("POST %s: server answered %d %s: %s", e.URL, e.Code, http.StatusText(e.Code), e.Message)
}

// errToolsUnsupported is a 400 that blames the tools: the model or server
// cannot do function calling.
var errToolsUnsupported = errors.New("the server does not support tools for this model")

// retryable marks an attempt's failure as worth retrying, with the
// server's Retry-After when it sent one.
type retryable struct {
	err   error
	after time.Duration // 0: none given
}

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// complete sends req, retrying failures that may pass (429, 5xx,
// dropped connections, truncated streams) with exponential backoff and
// jitter, or after the server's Retry-After, while ctx allows. Its
// errors start "openai: " and name the URL the request went to.
func (b *Brain) complete(ctx context.Context, log *slog.Logger, req request) (answer, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return answer{}, fmt.Errorf("openai: encode request: %w", err)
	}
	for attempt := 0; ; attempt++ {
		ans, err := b.attempt(ctx, body)
		if err == nil {
			return ans, nil
		}
		if ctx.Err() != nil {
			return answer{}, b.ctxError(ctx, err)
		}
		var r *retryable
		if !errors.As(err, &r) {
			return answer{}, fmt.Errorf("openai: %w", err)
		}
		if attempt >= b.retry.Max {
			return answer{}, fmt.Errorf("openai: giving up after %d attempts: %w", attempt+1, r.err)
		}
		wait := r.after
		if wait <= 0 {
			wait = b.jitter(backoff(b.retry.Base, b.retry.Cap, attempt))
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return answer{}, fmt.Errorf("openai: not retrying: a wait of %s would pass the turn's deadline: %w", wait.Round(time.Millisecond), r.err)
		}
		log.Info("openai request failed; retrying", "attempt", attempt+1, "wait", wait, "err", r.err)
		if err := b.sleep(ctx, wait); err != nil {
			return answer{}, b.ctxError(ctx, r.err)
		}
	}
}

// attempt makes one request and reads its answer. Its errors start
// "POST <url>: ", the URL as b.shownURL shows it.
func (b *Brain) attempt(ctx context.Context, body []byte) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.endpoint, bytes.NewReader(body))
	if err != nil {
		return answer{}, fmt.Errorf("POST %s: %w", b.shownURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream, application/json")
	if b.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+b.apiKey)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		// *url.Error names the URL as requested, user info and all: name
		// it as shown instead.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return answer{}, &retryable{err: fmt.Errorf("POST %s: %w", b.shownURL, err)}
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := &StatusError{URL: b.shownURL, Code: resp.StatusCode, Message: bodyMessage(resp.Body)}
		switch {
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
			return answer{}, &retryable{err: se, after: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
		case resp.StatusCode == http.StatusBadRequest && mentionsTools(se.Message):
			return answer{}, fmt.Errorf("%w: %w", errToolsUnsupported, se)
		}
		return answer{}, se
	}
	ans, err := readAnswer(resp.Header.Get("Content-Type"), resp.Body)
	switch {
	case err == nil:
		return ans, nil
	case errors.Is(err, errTruncated):
		return answer{}, &retryable{err: fmt.Errorf("POST %s: %w", b.shownURL, err)}
	}
	return answer{}, fmt.Errorf("POST %s: %w", b.shownURL, err)
}

// ctxError explains a failure caused by ctx ending, wrapping ctx's error
// so callers can tell a timeout with errors.Is.
func (b *Brain) ctxError(ctx context.Context, last error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("openai: no answer within the turn's time limit (%s; last error: %v): %w", b.timeout, last, ctx.Err())
	}
	return fmt.Errorf("openai: %w", ctx.Err())
}

// backoff is base doubled attempt times, at most max.
func backoff(base, limit time.Duration, attempt int) time.Duration {
	d := base
	for range attempt {
		if d >= limit/2 {
			return limit
		}
		d *= 2
	}
	return min(d, limit)
}

// retryAfter reads a Retry-After header: delay seconds or an HTTP date.
// It returns 0 when absent, malformed or in the past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, 24*3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// bodyMessage is an error response's message: the "error" of a JSON body,
// else the start of the body as text.
func bodyMessage(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4<<10))
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(b, &v) == nil {
		if msg := errorMessage(v.Error); msg != "" {
			return msg
		}
		if v.Message != "" {
			return v.Message
		}
	}
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}

// mentionsTools reports whether an error message blames tool support
// ("does not support tools", "tools are not supported", "tool_choice").
func mentionsTools(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "tool")
}
