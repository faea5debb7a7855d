package telegramtest

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Fail makes the next n calls of method (on any bot) fail with status:
// 429 answers Telegram's "Too Many Requests" with parameters.retry_after
// = retryAfter seconds; 502, 503 and 504 answer an HTML page as a proxy
// in front of the Bot API does; other statuses a JSON error envelope.
func (s *Server) Fail(method string, n, status, retryAfter int) {
	s.addFault(method, n, fault{status: status, retryAfter: retryAfter})
}

// Delay holds the next n calls of method for d before answering. A call
// whose client gives up first has no effect, like a request lost on the
// way; this is how tests make a client time out.
func (s *Server) Delay(method string, n int, d time.Duration) {
	s.addFault(method, n, fault{delay: d})
}

func (s *Server) addFault(method string, n int, f fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := strings.ToLower(method)
	for range n {
		s.faults[m] = append(s.faults[m], f)
	}
}

// Block makes chatID (a user) block the bot: sendMessage answers 403.
func (s *Server) Block(token string, chatID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bot(token).blockedBy[chatID] = true
}

// AddChat lets the bot write to chat without having received a message
// from it first (a user who pressed Start, a group the bot was added to).
// Without it, or a pushed message from the chat, sendMessage answers
// "chat not found".
func (s *Server) AddChat(token string, chat Chat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chat(chat)
	s.bot(token).known[chat.ID] = true
}

// Sent returns the messages the bot sent, oldest first.
func (s *Server) Sent(token string) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bot(token).sent)
}

// WaitSent waits until the bot has sent at least n messages and returns
// them all, or fails with what it has after timeout.
func (s *Server) WaitSent(token string, n int, timeout time.Duration) ([]SentMessage, error) {
	var out []SentMessage
	if !s.waitFor(timeout, func() bool {
		out = slices.Clone(s.bot(token).sent)
		return len(out) >= n
	}) {
		return out, fmt.Errorf("telegramtest: waited %s for %d sent messages, have %d", timeout, n, len(out))
	}
	return out, nil
}

// WaitFor waits until cond holds, checking it now and after every change
// on the server (a call, a push, a send); it reports false after timeout.
// cond runs without the server's lock, so it may call the Server's
// methods.
func (s *Server) WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// waitFor is WaitFor with cond run under the server's lock.
func (s *Server) waitFor(timeout time.Duration, cond func() bool) bool {
	return s.WaitFor(timeout, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return cond()
	})
}

// Actions returns the chat actions the bot sent, oldest first.
func (s *Server) Actions(token string) []ChatAction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bot(token).actions)
}

// Calls counts the calls of method the bot made, failed ones included.
func (s *Server) Calls(token, method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bot(token).calls[strings.ToLower(method)]
}

// Polling reports whether a getUpdates long poll of the bot is waiting.
func (s *Server) Polling(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bot(token).polling > 0
}

// Conflicts counts the bot's getUpdates calls that a newer one ended
// with 409: more than one poller of the bot at a time.
func (s *Server) Conflicts(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bot(token).conflicts
}

// Pending counts the bot's updates not yet confirmed by getUpdates.
func (s *Server) Pending(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bot(token).queue)
}

// Webhook returns the bot's webhook; URL is empty when none is set.
func (s *Server) Webhook(token string) WebhookInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bot(token).webhook
}
