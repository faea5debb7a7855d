package cliclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Conversation is one item of the admin API's GET /api/v1/conversations.
type Conversation struct {
	ID            string   `json:"id"`
	Platform      string   `json:"platform"`
	Kind          string   `json:"kind"`
	Bots          []string `json:"bots"`
	Open          bool     `json:"open"`
	LastMessageAt *string  `json:"last_message_at"`
}

// Conversations lists the person's terminal conversations (their rooms
// and private chats on the cli platform), newest message first, from the
// admin API.
func Conversations(ctx context.Context, o Options) ([]Conversation, error) {
	base, err := o.base()
	if err != nil {
		return nil, err
	}
	u := *base
	u.Path += "/api/v1/conversations"
	u.RawQuery = url.Values{"user": {o.PlatformID()}, "platform": {"cli"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+o.Token)
	client := &http.Client{Timeout: 15 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return nil, dialError(o.Server, nil, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, dialError(o.Server, resp, nil)
	}
	var list struct {
		Items []Conversation `json:"items"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&list); err != nil {
		return nil, fmt.Errorf("%s answered with a list that is not JSON: %w", o.Server, err)
	}
	return list.Items, nil
}
