package telegramtest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The Bot API methods. Each answers as Telegram does, including its error
// descriptions, for the parameters Switchboard sends.

func (s *Server) getMe(w http.ResponseWriter, token string) {
	s.mu.Lock()
	u := s.bot(token).user
	s.mu.Unlock()
	writeOK(w, u, "")
}

const (
	conflictWebhook = "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
	conflictPoller  = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
)

// getUpdates confirms the updates below offset (a negative offset keeps
// only the last -offset), then answers up to limit queued ones, waiting up
// to timeout seconds for one to arrive. A newer getUpdates of the same bot
// ends a waiting one with 409, as Telegram does.
func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, token string, p map[string]string) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	limit, err := strconv.Atoi(p["limit"])
	if err != nil || limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, _ := strconv.Atoi(p["timeout"])
	deadline := time.Now().Add(time.Duration(max(timeout, 0)) * time.Second)
	var allowed []string
	if a := p["allowed_updates"]; a != "" {
		json.Unmarshal([]byte(a), &allowed)
	}

	s.mu.Lock()
	b := s.bot(token)
	if b.webhook.URL != "" {
		s.mu.Unlock()
		writeError(w, http.StatusConflict, conflictWebhook, 0)
		return
	}
	b.pollGen++
	gen := b.pollGen
	switch {
	case offset > 0:
		b.queue = slices.DeleteFunc(b.queue, func(u Update) bool { return u.UpdateID < offset })
	case offset < 0:
		b.queue = b.queue[max(0, len(b.queue)+int(offset)):]
	}
	if len(allowed) > 0 {
		b.queue = slices.DeleteFunc(b.queue, func(u Update) bool { return !slices.Contains(allowed, kind(u)) })
	}
	b.polling++
	s.notifyLocked() // wakes an older poll of this bot, which ends with 409
	defer func() { b.polling--; s.notifyLocked(); s.mu.Unlock() }()
	for {
		switch {
		case gen != b.pollGen:
			b.conflicts++
			writeError(w, http.StatusConflict, conflictPoller, 0)
			return
		case b.webhook.URL != "":
			writeError(w, http.StatusConflict, conflictWebhook, 0)
			return
		}
		if len(b.queue) > 0 || !time.Now().Before(deadline) {
			writeOK(w, append([]Update{}, b.queue[:min(limit, len(b.queue))]...), "")
			return
		}
		ch := s.changed
		s.mu.Unlock()
		timer := time.NewTimer(time.Until(deadline))
		select {
		case <-ch:
		case <-timer.C:
		case <-r.Context().Done():
		case <-s.closing:
		}
		timer.Stop()
		s.mu.Lock()
		if r.Context().Err() != nil {
			return
		}
		select {
		case <-s.closing:
			writeOK(w, []Update{}, "")
			return
		default:
		}
	}
}

// kind is an update's type as allowed_updates names it.
func kind(u Update) string {
	switch {
	case u.Message != nil:
		return "message"
	case u.EditedMessage != nil:
		return "edited_message"
	case u.ChannelPost != nil:
		return "channel_post"
	}
	return ""
}

// sendMessage checks the text (1 to 4096 UTF-16 units) and the chat,
// honours reply_parameters (or the older reply_to_message_id) and
// allow_sending_without_reply, and records the message.
func (s *Server) sendMessage(w http.ResponseWriter, token string, p map[string]string) {
	text := p["text"]
	switch {
	case strings.TrimSpace(text) == "":
		writeError(w, http.StatusBadRequest, "Bad Request: message text is empty", 0)
		return
	case UTF16Len(text) > 4096:
		writeError(w, http.StatusBadRequest, "Bad Request: message is too long", 0)
		return
	case !slices.Contains([]string{"", "HTML", "Markdown", "MarkdownV2"}, p["parse_mode"]):
		writeError(w, http.StatusBadRequest, "Bad Request: unsupported parse_mode", 0)
		return
	}
	var reply struct {
		MessageID int64 `json:"message_id"`
		Allow     bool  `json:"allow_sending_without_reply"`
	}
	if rp := p["reply_parameters"]; rp != "" {
		if err := json.Unmarshal([]byte(rp), &reply); err != nil {
			writeError(w, http.StatusBadRequest, "Bad Request: can't parse reply parameters JSON object", 0)
			return
		}
	} else {
		reply.MessageID, _ = strconv.ParseInt(p["reply_to_message_id"], 10, 64)
		reply.Allow = p["allow_sending_without_reply"] == "true"
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(token)
	c, ok := s.writableLocked(w, b, p)
	if !ok {
		return
	}
	if reply.MessageID != 0 && !c.msgs[reply.MessageID] {
		if !reply.Allow {
			writeError(w, http.StatusBadRequest, "Bad Request: message to be replied not found", 0)
			return
		}
		reply.MessageID = 0
	}
	sm := SentMessage{ChatID: c.info.ID, MessageID: c.nextID, Text: text, ReplyTo: reply.MessageID, ParseMode: p["parse_mode"], From: b.user, Date: time.Now()}
	c.nextID++
	c.msgs[sm.MessageID] = true
	b.sent = append(b.sent, sm)
	s.notifyLocked()

	from := b.user
	res := Message{MessageID: sm.MessageID, From: &from, Chat: c.info, Date: sm.Date.Unix(), Text: text}
	if reply.MessageID != 0 {
		res.ReplyToMessage = &Message{MessageID: reply.MessageID, Chat: c.info}
	}
	writeOK(w, res, "")
}

// writableLocked finds the chat named by chat_id that the bot may write
// to, or answers Telegram's error. Callers hold mu.
func (s *Server) writableLocked(w http.ResponseWriter, b *botState, p map[string]string) (*chatState, bool) {
	raw := p["chat_id"]
	if raw == "" {
		writeError(w, http.StatusBadRequest, "Bad Request: chat_id is empty", 0)
		return nil, false
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	c := s.chats[id]
	if err != nil || c == nil || !b.known[id] {
		writeError(w, http.StatusBadRequest, "Bad Request: chat not found", 0)
		return nil, false
	}
	if b.blockedBy[id] {
		writeError(w, http.StatusForbidden, "Forbidden: bot was blocked by the user", 0)
		return nil, false
	}
	return c, true
}

var chatActions = []string{"typing", "upload_photo", "record_video", "upload_video", "record_voice", "upload_voice", "upload_document", "choose_sticker", "find_location", "record_video_note", "upload_video_note"}

func (s *Server) sendChatAction(w http.ResponseWriter, token string, p map[string]string) {
	if !slices.Contains(chatActions, p["action"]) {
		writeError(w, http.StatusBadRequest, "Bad Request: wrong parameter action in request", 0)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(token)
	c, ok := s.writableLocked(w, b, p)
	if !ok {
		return
	}
	b.actions = append(b.actions, ChatAction{ChatID: c.info.ID, Action: p["action"]})
	s.notifyLocked()
	writeOK(w, true, "")
}

var secretToken = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

// setWebhook records the webhook (an empty url removes it). Unlike
// Telegram it accepts http:// URLs, so tests can use loopback servers.
func (s *Server) setWebhook(w http.ResponseWriter, token string, p map[string]string) {
	hook := WebhookInfo{URL: p["url"], Secret: p["secret_token"], MaxConnections: 40}
	if hook.URL != "" {
		u, err := url.Parse(hook.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			writeError(w, http.StatusBadRequest, "Bad Request: bad webhook: invalid URL", 0)
			return
		}
	}
	if hook.Secret != "" && !secretToken.MatchString(hook.Secret) {
		writeError(w, http.StatusBadRequest, "Bad Request: secret token contains unallowed characters", 0)
		return
	}
	if mc := p["max_connections"]; mc != "" {
		n, err := strconv.Atoi(mc)
		if err != nil || n < 1 || n > 100 {
			writeError(w, http.StatusBadRequest, "Bad Request: bad webhook: max_connections must be between 1 and 100", 0)
			return
		}
		hook.MaxConnections = n
	}
	if a := p["allowed_updates"]; a != "" {
		json.Unmarshal([]byte(a), &hook.AllowedUpdates)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(token)
	if p["drop_pending_updates"] == "true" {
		b.queue = nil
	}
	if hook.URL == "" {
		hook = WebhookInfo{}
	}
	b.webhook = hook
	s.notifyLocked()
	if hook.URL == "" {
		writeOK(w, true, "Webhook was deleted")
		return
	}
	writeOK(w, true, "Webhook was set")
}

func (s *Server) deleteWebhook(w http.ResponseWriter, token string, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(token)
	if p["drop_pending_updates"] == "true" {
		b.queue = nil
	}
	had := b.webhook.URL != ""
	b.webhook = WebhookInfo{}
	s.notifyLocked()
	if had {
		writeOK(w, true, "Webhook was deleted")
		return
	}
	writeOK(w, true, "Webhook is already deleted")
}
