package discordtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// injection is one injected failure or delay.
type injection struct {
	status     int
	retryAfter float64
	delay      time.Duration
}

// rateWindow is one fixed rate-limit window of a bucket.
type rateWindow struct {
	end   time.Time
	count int
}

// Discord's JSON error codes the fake answers with.
const (
	codeInvalidForm  = 50035
	codeEmptyMessage = 50006
	codeInvalidJSON  = 50109
	codeUnknownMsg   = 10008
)

func (s *Server) routes(mux *http.ServeMux) {
	s.handle(mux, RouteGateway, false, s.getGateway)
	s.handle(mux, RouteGatewayBot, true, s.getGatewayBot)
	s.handle(mux, RouteMe, true, s.getMe)
	s.handle(mux, RouteCreateMessage, true, s.createMessage)
	s.handle(mux, RouteTyping, true, s.triggerTyping)
	s.handle(mux, RouteCreateDM, true, s.createDM)
}

// handle serves route under /api/v9: it counts the request, applies an
// injected delay or failure, and checks the bot token.
func (s *Server) handle(mux *http.ServeMux, route string, auth bool, h func(http.ResponseWriter, *http.Request, *bot)) {
	method, path, _ := strings.Cut(route, " ")
	mux.HandleFunc(method+" /api/v9"+path, func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests[route]++
		var in injection
		if q := s.injected[route]; len(q) > 0 {
			in, s.injected[route] = q[0], q[1:]
		}
		b := s.bots[strings.TrimPrefix(r.Header.Get("Authorization"), "Bot ")]
		s.mu.Unlock()
		if in.delay > 0 {
			// Read the body first: only then does net/http watch the
			// connection and cancel the request when the client leaves.
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			t := time.NewTimer(in.delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
			}
			if r.Context().Err() != nil {
				return // the client gave up: the request never happened
			}
		}
		if auth && b == nil {
			writeError(w, http.StatusUnauthorized, 0, "401: Unauthorized")
			return
		}
		switch {
		case in.status == http.StatusTooManyRequests:
			tooMany(w, in.retryAfter, route)
		case in.status != 0:
			writeError(w, in.status, 0, http.StatusText(in.status))
		default:
			h(w, r, b)
		}
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"message": msg, "code": code})
}

// tooMany answers 429 the way Discord does: retry_after in the body
// (seconds, fractional), Retry-After in whole seconds, and the bucket's
// X-RateLimit headers.
func tooMany(w http.ResponseWriter, retryAfter float64, bucket string) {
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(retryAfter))))
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", resetAt(time.Now().Add(seconds(retryAfter))))
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(retryAfter, 'f', 3, 64))
	h.Set("X-RateLimit-Bucket", bucketHash(bucket))
	h.Set("X-RateLimit-Scope", "user")
	writeJSON(w, http.StatusTooManyRequests, map[string]any{
		"message": "You are being rate limited.", "retry_after": retryAfter, "global": false,
	})
}

// take counts a request against the window of (bot, route, channel), sets
// the X-RateLimit headers, and answers 429 when the window is spent.
func (s *Server) take(w http.ResponseWriter, b *bot, route, channel string) bool {
	s.mu.Lock()
	key := b.token + "\x00" + route + "\x00" + channel
	now := time.Now()
	win := s.windows[key]
	if win == nil || !now.Before(win.end) {
		win = &rateWindow{end: now.Add(s.window)}
		s.windows[key] = win
	}
	limit := s.limit
	ok := win.count < limit
	if ok {
		win.count++
	}
	remaining, end := limit-win.count, win.end
	s.mu.Unlock()
	after := end.Sub(now).Seconds()
	if !ok {
		tooMany(w, after, route)
		return false
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Reset", resetAt(end))
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(after, 'f', 3, 64))
	h.Set("X-RateLimit-Bucket", bucketHash(route))
	return true
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func resetAt(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

func bucketHash(route string) string {
	h := fnv.New64a()
	h.Write([]byte(route))
	return fmt.Sprintf("%016x", h.Sum64())
}

func (s *Server) getGateway(w http.ResponseWriter, _ *http.Request, _ *bot) {
	writeJSON(w, http.StatusOK, map[string]any{"url": s.GatewayURL()})
}

func (s *Server) getGatewayBot(w http.ResponseWriter, _ *http.Request, _ *bot) {
	writeJSON(w, http.StatusOK, map[string]any{
		"url":    s.GatewayURL(),
		"shards": 1,
		"session_start_limit": map[string]any{
			"total": 1000, "remaining": 999, "reset_after": 86_400_000, "max_concurrency": 1,
		},
	})
}

func (s *Server) getMe(w http.ResponseWriter, _ *http.Request, b *bot) {
	writeJSON(w, http.StatusOK, userJSON(b.user))
}

// createMessage is POST /channels/{channel_id}/messages.
func (s *Server) createMessage(w http.ResponseWriter, r *http.Request, b *bot) {
	channel := r.PathValue("channel_id")
	var body struct {
		Content   string `json:"content"`
		Reference *struct {
			MessageID       string `json:"message_id"`
			FailIfNotExists *bool  `json:"fail_if_not_exists"`
		} `json:"message_reference"`
	}
	multipart := strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/")
	var err error
	if multipart {
		if err = r.ParseMultipartForm(8 << 20); err == nil {
			err = json.Unmarshal([]byte(r.FormValue("payload_json")), &body)
		}
	} else {
		err = json.NewDecoder(r.Body).Decode(&body)
	}
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, codeInvalidJSON, "The request body contains invalid JSON.")
		return
	case utf8.RuneCountInString(body.Content) > 2000:
		writeError(w, http.StatusBadRequest, codeInvalidForm, "Invalid Form Body: content: Must be 2000 or fewer in length.")
		return
	case strings.TrimSpace(body.Content) == "":
		writeError(w, http.StatusBadRequest, codeEmptyMessage, "Cannot send an empty message")
		return
	}
	if !s.take(w, b, RouteCreateMessage, channel) {
		return
	}
	s.mu.Lock()
	sent := SentMessage{
		ID: s.newIDLocked(), ChannelID: channel, Bot: b.user.ID, Content: body.Content,
		Multipart: multipart, Time: time.Now().UTC(),
	}
	if ref := body.Reference; ref != nil && ref.MessageID != "" {
		if _, known := s.known[ref.MessageID]; !known && (ref.FailIfNotExists == nil || *ref.FailIfNotExists) {
			s.mu.Unlock()
			writeError(w, http.StatusBadRequest, codeUnknownMsg, "Unknown message")
			return
		}
		sent.ReplyTo = ref.MessageID
	}
	s.posted = append(s.posted, sent)
	s.known[sent.ID] = struct{}{}
	m := MessageCreate{
		ID: sent.ID, ChannelID: channel, GuildID: s.guildOf[channel], Author: b.user,
		Content: sent.Content, Timestamp: sent.Time, ReferenceID: sent.ReplyTo,
	}
	if s.echo {
		for _, v := range s.viewersLocked(channel, b.user.ID) {
			s.deliverLocked(v, m)
		}
	}
	resp := s.messageJSON(m, m.Content)
	s.mu.Unlock()
	select {
	case s.sent <- sent:
	default:
		s.t.Errorf("discordtest: Messages channel full; read it or use Sent")
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) triggerTyping(w http.ResponseWriter, r *http.Request, b *bot) {
	channel := r.PathValue("channel_id")
	if !s.take(w, b, RouteTyping, channel) {
		return
	}
	s.mu.Lock()
	s.typing[channel]++
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// createDM is POST /users/@me/channels.
func (s *Server) createDM(w http.ResponseWriter, r *http.Request, b *bot) {
	var body struct {
		RecipientID string `json:"recipient_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.RecipientID == "" {
		writeError(w, http.StatusBadRequest, codeInvalidForm, "Invalid Form Body: recipient_id: This field is required")
		return
	}
	s.mu.Lock()
	ch := s.dmLocked(b.user.ID, body.RecipientID)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"id": ch, "type": 1, "last_message_id": nil, "flags": 0,
		"recipients": []any{userJSON(User{ID: body.RecipientID, Username: "user" + body.RecipientID})},
	})
}

var mentionRE = regexp.MustCompile(`<@!?([0-9]+)>`)

// messageJSON is m as Discord sends it, with content as given (blanked
// without the message content intent). Callers hold mu.
func (s *Server) messageJSON(m MessageCreate, content string) map[string]any {
	mentions := []any{}
	for _, sub := range mentionRE.FindAllStringSubmatch(m.Content, -1) {
		u := User{ID: sub[1], Username: "user" + sub[1]}
		for _, b := range s.bots {
			if b.user.ID == sub[1] {
				u = b.user
			}
		}
		mentions = append(mentions, userJSON(u))
	}
	d := map[string]any{
		"id":               m.ID,
		"channel_id":       m.ChannelID,
		"author":           userJSON(m.Author),
		"content":          content,
		"timestamp":        m.Timestamp.UTC().Format(time.RFC3339Nano),
		"edited_timestamp": nil,
		"tts":              false,
		"mention_everyone": false,
		"mentions":         mentions,
		"mention_roles":    []any{},
		"attachments":      []any{},
		"embeds":           []any{},
		"pinned":           false,
		"type":             0,
	}
	if m.GuildID != "" {
		d["guild_id"] = m.GuildID
	}
	if m.ReferenceID != "" {
		d["type"] = 19
		ref := map[string]any{"message_id": m.ReferenceID, "channel_id": m.ChannelID}
		if m.GuildID != "" {
			ref["guild_id"] = m.GuildID
		}
		d["message_reference"] = ref
	}
	return d
}

func userJSON(u User) map[string]any {
	d := map[string]any{"id": u.ID, "username": u.Username, "discriminator": "0", "bot": u.Bot, "global_name": nil}
	if u.GlobalName != "" {
		d["global_name"] = u.GlobalName
	}
	return d
}
