package telegramtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
)

// Push queues upd for the bot as Telegram does when a message arrives. The
// server fills in what Telegram would: the update ID, and when zero the
// message ID (the chat's next) and the date. It returns the update as
// queued, so a test knows the message ID.
func (s *Server) Push(token string, upd Update) Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(token)
	upd = s.stampLocked(b, upd)
	b.queue = append(b.queue, upd)
	s.notifyLocked()
	return upd
}

// Redeliver queues upd (as returned by Push) again under a new update ID:
// the same message arriving twice, as after a webhook retry or a poller
// that restarted before confirming.
func (s *Server) Redeliver(token string, upd Update) Update {
	if upd.Message == nil || upd.Message.MessageID == 0 {
		s.t.Errorf("telegramtest: Redeliver needs an update returned by Push")
	}
	return s.Push(token, upd)
}

// stampLocked assigns IDs and the date, and records the message in its
// chat. Callers hold mu.
func (s *Server) stampLocked(b *botState, upd Update) Update {
	for _, mp := range []**Message{&upd.Message, &upd.EditedMessage, &upd.ChannelPost} {
		if *mp == nil {
			continue
		}
		m := **mp // a copy: the caller's update is not changed
		c := s.chat(m.Chat)
		if m.MessageID == 0 {
			m.MessageID = c.nextID
		}
		c.nextID = max(c.nextID, m.MessageID+1)
		c.msgs[m.MessageID] = true
		if m.Date == 0 {
			m.Date = time.Now().Unix()
		}
		b.known[m.Chat.ID] = true
		*mp = &m
	}
	b.nextID++
	upd.UpdateID = b.nextID
	return upd
}

// PostWebhook plays Telegram calling a webhook: it POSTs upd as JSON to
// url with the secret in X-Telegram-Bot-Api-Secret-Token (no header when
// secret is empty) and returns the HTTP status.
func (s *Server) PostWebhook(url, secret string, upd Update) (int, error) {
	body, err := json.Marshal(upd)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// DeliverWebhook stamps upd as Push does and posts it to the webhook the
// bot registered with setWebhook, with its secret. It returns the update
// as sent (post it again with PostWebhook to play Telegram's retry) and
// the HTTP status.
func (s *Server) DeliverWebhook(token string, upd Update) (Update, int, error) {
	s.mu.Lock()
	b := s.bot(token)
	hook := b.webhook
	upd = s.stampLocked(b, upd)
	s.mu.Unlock()
	if hook.URL == "" {
		return upd, 0, errors.New("telegramtest: the bot has no webhook")
	}
	status, err := s.PostWebhook(hook.URL, hook.Secret, upd)
	return upd, status, err
}
