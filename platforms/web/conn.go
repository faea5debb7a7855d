package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"

	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
)

const (
	sendBuffer = 256
	writeWait  = 10 * time.Second
	pongWait   = 60 * time.Second
	pingEvery  = 45 * time.Second
	// Frames over 64 KiB are refused with too_large and the connection
	// stays open; only a frame over hardMaxRead (which no client of the
	// protocol sends) closes it, so one peer cannot make us read forever.
	hardMaxRead = 8 << 20
	// deadlineStep is how far a connection's read and write deadlines may
	// fall short of pongWait and writeWait: they move in steps of it, so
	// a busy connection does not reset its socket's timers with every
	// frame.
	deadlineStep = time.Second
)

// conn is one widget connection. readLoop handles client frames in order;
// writeLoop owns every write to the socket.
type conn struct {
	a    *Adapter
	host gateway.Host
	ws   *websocket.Conn
	// sock is the socket under ws, which the write loop holds while it
	// writes the frames that are waiting.
	sock *heldConn
	v    visitor
	// ip is the remote address, whose anonymous visitors share a
	// message rate.
	ip   string
	out  chan outFrame
	done chan struct{}
	once sync.Once

	mu    sync.Mutex
	rooms map[string]struct{}

	// frameLimit limits the frames the client may send.
	frameLimit *rate.Limiter
	// rateErrorAt is when the last rate_limited error frame was sent;
	// refusedSince counts the refusals since, which got none. Both are
	// readLoop's.
	rateErrorAt  time.Time
	refusedSince int
	// frame holds the frame being read, reused by readLoop.
	frame bytes.Buffer
	// batch holds the frames of one flush, reused by writeLoop.
	batch []outFrame
}

// maxBatch is the most frames the write loop sends in one flush.
const maxBatch = 32

func newConn(a *Adapter, host gateway.Host, ws *websocket.Conn, sock *heldConn, v visitor, ip string) *conn {
	return &conn{
		a: a, host: host, ws: ws, sock: sock, v: v, ip: ip,
		out:        make(chan outFrame, sendBuffer),
		done:       make(chan struct{}),
		rooms:      make(map[string]struct{}),
		frameLimit: newFrameLimiter(),
	}
}

// outFrame is a frame waiting for the write loop; done, when set, learns
// whether it was written (see sendThen).
type outFrame struct {
	v    any
	done func(error)
}

// errConnClosed is the fate of frames a closed connection did not write.
var errConnClosed = errors.New("web: connection closed before the frame was written")

// send queues a frame; false if the connection is gone or too slow (a
// client that lets sendBuffer frames pile up is disconnected and will read
// history when it comes back).
func (c *conn) send(f any) bool {
	return c.enqueue(outFrame{v: f})
}

func (c *conn) enqueue(f outFrame) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	select {
	case c.out <- f:
		return true
	default:
		c.a.log.Warn("slow websocket client disconnected", "platform_id", c.v.platformID)
		// Not on the caller's goroutine, which may be the store's
		// committer: the close frame may wait up to a second.
		go c.close(websocket.CloseTryAgainLater, "too slow")
		return false
	}
}

// sendThen queues a frame and calls done exactly once, without blocking
// the caller: with nil once the frame has been written to the socket, or
// with an error if it was not, or may not have been. Counting an unsure
// frame as unwritten can only cause a resend, which the client drops by
// message ID.
func (c *conn) sendThen(f any, done func(error)) {
	report := onlyOnce(done)
	if !c.enqueue(outFrame{v: f, done: report}) {
		report(errConnClosed)
		return
	}
	// Queued as the connection closed, the frame may never be taken:
	// failPending drains only what was queued before it ran.
	select {
	case <-c.done:
		report(errConnClosed)
	default:
	}
}

// onlyOnce returns done, which it calls the first time it is called only.
func onlyOnce(done func(error)) func(error) {
	var once atomic.Bool
	return func(err error) {
		if once.CompareAndSwap(false, true) {
			done(err)
		}
	}
}

// close ends the connection once, with a close frame when possible.
func (c *conn) close(code int, reason string) {
	c.once.Do(func() {
		close(c.done)
		msg := websocket.FormatCloseMessage(code, reason)
		c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
		c.ws.Close()
	})
}

func (c *conn) joined() map[string]struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]struct{}, len(c.rooms))
	for r := range c.rooms {
		out[r] = struct{}{}
	}
	return out
}

// writeLoop writes queued frames and pings until the connection closes;
// frames it could not write are reported as such.
func (c *conn) writeLoop() {
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	defer c.failPending()
	for {
		select {
		case <-c.done:
			return
		case f := <-c.out:
			if err := c.writeBatch(f); err != nil {
				c.close(websocket.CloseAbnormalClosure, "")
				return
			}
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				c.close(websocket.CloseAbnormalClosure, "")
				return
			}
		}
	}
}

// writeBatch writes f and the frames queued behind it, up to maxBatch, in
// one system call, then tells their senders. Each frame is one WebSocket
// message of JSON (encoding/json, as WriteJSON writes it); the held socket
// gathers them until the flush.
func (c *conn) writeBatch(f outFrame) error {
	// (In steps: the same deadline for a second's batches leaves the
	// socket's timer alone.)
	deadline := time.Now().Add(writeWait).Truncate(deadlineStep)
	c.ws.SetWriteDeadline(deadline)
	c.sock.hold()
	batch := append(c.batch[:0], f)
	err := c.ws.WriteJSON(f.v)
	for err == nil && len(batch) < maxBatch {
		var more bool
		select {
		case f, more = <-c.out:
		default:
		}
		if !more {
			break
		}
		batch = append(batch, f)
		err = c.ws.WriteJSON(f.v)
	}
	if ferr := c.sock.flush(deadline); err == nil {
		err = ferr
	}
	for i, f := range batch {
		if f.done != nil {
			f.done(err)
		}
		batch[i] = outFrame{}
	}
	c.batch = batch[:0]
	return err
}

// failPending tells waiting senders that their frames were not written.
// No frame is queued after done is closed, except by a sender that raced
// the close; such a sender also sees done and gives up on its own.
func (c *conn) failPending() {
	for {
		select {
		case f := <-c.out:
			if f.done != nil {
				f.done(errConnClosed)
			}
		default:
			return
		}
	}
}

// readLoop handles the client's frames until it leaves; bots are the
// bots its hello listed.
func (c *conn) readLoop(bots []gateway.BotInfo) {
	defer c.close(websocket.CloseNormalClosure, "")
	c.ws.SetReadLimit(hardMaxRead)
	c.ws.SetReadDeadline(time.Now().Add(pongWait))
	c.ws.SetPongHandler(func(string) error { return c.ws.SetReadDeadline(time.Now().Add(pongWait)) })

	chats := make([]string, 0, len(bots))
	for _, b := range bots {
		chats = append(chats, gateway.PrivateChatID(c.v.platformID, b.ID))
	}
	c.host.Reachable(c.v.platform, chats...)

	readBy := time.Now().Add(pongWait)
	for {
		kind, r, err := c.ws.NextReader()
		if err != nil {
			return
		}
		now := time.Now()
		if by := now.Add(pongWait); by.Sub(readBy) >= deadlineStep {
			c.ws.SetReadDeadline(by)
			readBy = by
		}
		if c.frame.Cap() > 8<<10 {
			c.frame = bytes.Buffer{} // a large frame's buffer is not kept
		}
		c.frame.Reset()
		if _, err := c.frame.ReadFrom(io.LimitReader(r, maxFrameBytes+1)); err != nil {
			return
		}
		data := c.frame.Bytes()
		if len(data) > maxFrameBytes {
			if _, err := io.Copy(io.Discard, r); err != nil {
				return
			}
		}
		// Every frame counts against the connection's frame rate, an
		// oversized or malformed one too.
		if !c.frameLimit.AllowN(now, 1) {
			c.refuseRate(now, peekClientID(data), "more than 20 frames per second from this connection")
			continue
		}
		if len(data) > maxFrameBytes {
			c.refuse(&frameError{Code: codeTooLarge, Message: "frame larger than 65536 bytes"})
			continue
		}
		if kind != websocket.TextMessage {
			c.refuse(badRequest("", "frames must be JSON text"))
			continue
		}
		f, err := decodeFrame(data)
		if err == nil && f.Type == "send" {
			if why := c.allowMessage(now); why != "" {
				c.refuseRate(now, f.ClientID, why)
				continue
			}
		}
		if err == nil {
			err = c.handle(f)
		}
		if err != nil {
			c.refuse(err)
		}
	}
}

// allowMessage applies the message rates across connections to a send
// frame: the person's, and their address's if they are anonymous. It
// returns why the message is refused, or "".
func (c *conn) allowMessage(now time.Time) string {
	person := c.host.Resolve(c.v.platformID).ID
	anonymous := strings.HasPrefix(c.v.platformID, anonPrefix)
	return c.a.messages.allow(now, person, c.ip, anonymous)
}

// refuseRate answers a frame a rate limit refused. Only the first refusal
// in rateErrorGap gets an error frame (with the refused frame's
// client_id); the others of a burst are dropped without one, so however
// fast a client sends, its connection gets at most one error a second and
// stays open. A client treats a send that got neither an ack nor an error
// as refused too.
func (c *conn) refuseRate(now time.Time, clientID, why string) {
	if !c.rateErrorAt.IsZero() && now.Sub(c.rateErrorAt) < rateErrorGap {
		c.refusedSince++
		return
	}
	if c.refusedSince > 0 {
		why += fmt.Sprintf(" (%d more frames refused since the last error)", c.refusedSince)
	}
	c.a.log.Debug("websocket frame rate limited", "platform_id", c.v.platformID, "reason", why)
	c.rateErrorAt, c.refusedSince = now, 0
	c.send(errorFrame{Type: "error", Code: codeRateLimited, Message: why, ClientID: clientID})
}

// refuse answers a frame with an error frame; the connection stays open.
func (c *conn) refuse(err error) {
	var fe *frameError
	if !errors.As(err, &fe) {
		c.a.log.Error("websocket frame", "platform_id", c.v.platformID, "err", err)
		fe = &frameError{Code: codeUnavailable, Message: errUnavailable.Error()}
	}
	c.send(errorFrame{Type: "error", Code: fe.Code, Message: fe.Message, ClientID: fe.ClientID})
}

func (c *conn) handle(f inFrame) error {
	ctx := context.Background()
	switch f.Type {
	case "send":
		return c.handleSend(ctx, f)
	case "join":
		return c.handleJoin(ctx, f)
	case "history":
		return c.handleHistory(ctx, f)
	case "invite":
		return c.handleInvite(ctx, f)
	case "findings":
		return c.handleFindings(ctx, f)
	case "context":
		return c.handleContext(ctx, f)
	}
	return badRequest(f.ClientID, "unknown type %q", f.Type)
}

// onWeb reports whether bot is on the connection's platform (the web's
// bots, or every bot for the terminal).
func (c *conn) onWeb(bot string) bool {
	for _, b := range c.host.Bots(c.v.platform) {
		if b.ID == bot {
			return true
		}
	}
	return false
}

func (c *conn) handleSend(ctx context.Context, f inFrame) error {
	ev := gateway.Event{
		Platform: c.v.platform,
		Sender:   gateway.Sender{PlatformID: c.v.platformID, Name: c.displayName()},
		Text:     f.Text,
		Mentions: gateway.ParseMentions(f.Text),
		Time:     time.Now(),
	}
	clientID := f.ClientID
	if clientID == "" {
		clientID = uuid.NewString()
	}
	if f.Bot != "" {
		if !c.onWeb(f.Bot) {
			return c.unknownBot(f.Bot, f.ClientID)
		}
		ev.Bot, ev.ChatType = f.Bot, chat.Private
		ev.ChatID = gateway.PrivateChatID(c.v.platformID, f.Bot)
		ev.MessageID = clientID
	} else {
		// Whether the person may write in the room (SPEC §12) is the
		// gateway's to say, in Deliver.
		ev.ChatID, ev.ChatType, ev.ChatName = f.Chat, chat.Group, f.Chat
		// Client IDs are only unique per sender.
		ev.MessageID = c.v.platformID + "/" + clientID
		if f.ReplyTo > 0 {
			ev.ReplyTo = strconv.FormatInt(f.ReplyTo, 10)
		}
	}
	// The ack and the copies for the user's other tabs go out as soon as
	// the message is stored, ahead of any reply to it.
	// (The callback keeps the few fields it needs, not the event.)
	ackID, chatID, group, bot, name, text := f.ClientID, ev.ChatID, ev.ChatType == chat.Group, ev.Bot, ev.Sender.Name, ev.Text
	ev.OnStored = func(rec gateway.Receipt) {
		ack := ackFrame{Type: "ack", ClientID: ackID, ID: rec.MessageID}
		if rec.Turn {
			ack.Queued = &rec.Queued
		}
		c.send(ack)
		if !rec.Duplicate {
			c.a.broadcast(c.v.platform, chatID, group, c, func() any {
				f := messageFrame{
					Type: "message", ID: rec.MessageID, Chat: chatID, Bot: bot,
					From: chat.Party{Kind: "human", ID: c.v.platformID, Name: name},
					Text: text, Time: rec.Time.UTC().Format(time.RFC3339Nano),
				}
				if group {
					f.ChatType = string(chat.Group)
				}
				return f
			})
		}
	}
	if _, err := c.host.Deliver(ctx, ev); err != nil {
		return c.refusal("deliver", err, f.ClientID)
	}
	return nil
}

func (c *conn) handleJoin(ctx context.Context, f inFrame) error {
	bots, err := c.host.JoinRoom(ctx, gateway.RoomJoin{
		Platform: c.v.platform, Room: f.Chat, PlatformID: c.v.platformID, Bots: f.Bots, Open: f.Open,
	})
	if err != nil {
		return c.refusal("join", err, f.ClientID)
	}
	c.mu.Lock()
	c.rooms[f.Chat] = struct{}{}
	c.mu.Unlock()
	c.a.joinRoom(c, f.Chat)
	c.send(joinedFrame{Type: "joined", Chat: f.Chat, Bots: bots})
	return nil
}

func (c *conn) handleHistory(ctx context.Context, f inFrame) error {
	limit := f.Limit
	if limit == 0 {
		limit = defaultHistory
	}
	limit = min(limit, maxHistory)
	var msgs []gateway.Shown
	var err error
	out := historyFrame{Type: "history", Bot: f.Bot, Messages: []messageFrame{}}
	if f.Bot != "" {
		if !c.onWeb(f.Bot) {
			return c.unknownBot(f.Bot, f.ClientID)
		}
		out.Chat = gateway.PrivateChatID(c.v.platformID, f.Bot)
		msgs, err = c.host.SessionHistory(ctx, f.Bot, c.v.platformID, limit)
	} else {
		out.Chat = f.Chat
		msgs, err = c.host.RoomHistory(ctx, c.v.platform, f.Chat, c.v.platformID, limit)
	}
	if err != nil {
		return c.refusal("history", err, f.ClientID)
	}
	for _, m := range msgs {
		f := frameOf(m)
		f.From.Name = c.partyName(f.From)
		out.Messages = append(out.Messages, f)
	}
	c.send(out)
	return nil
}

// displayName is the name a visitor's messages carry: their users.yaml
// name, a signed-in user's ID, an anonymous visitor's guest name.
func (c *conn) displayName() string {
	if u := c.host.Resolve(c.v.platformID); u.Name != "" {
		return u.Name
	}
	if c.v.verified {
		_, name, _ := strings.Cut(c.v.platformID, "-")
		return name
	}
	return "Guest"
}

// partyName is the name a stored message's author is shown with: an
// anonymous visitor's is their guest name, whatever was stored (messages
// of earlier versions say "Guest"), so every page shows one visitor by
// one name; everyone else's is the stored one.
func (c *conn) partyName(p chat.Party) string {
	if p.Kind == chat.Human && strings.HasPrefix(p.ID, anonPrefix) {
		if u := c.host.Resolve(p.ID); u.Name != "" {
			return u.Name
		}
	}
	return p.Name
}

// newFrameLimiter returns a connection's limit on the frames it reads:
// framesPerSecond sustained, frameBurst at once.
func newFrameLimiter() *rate.Limiter {
	return rate.NewLimiter(framesPerSecond, frameBurst)
}
