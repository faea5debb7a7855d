package discord_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/platforms/discord"
	"github.com/switchboard-chat/switchboard/platforms/discord/discordtest"
)

func TestDirectMessageIsAnswered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discord.Options{}, "matty")
	m := e.srv.DM(mattyToken, alice, "hello there")
	id := e.srv.Dispatch(mattyToken, m)
	got := e.expect(m.ChannelID, "Matty heard: hello there")
	if got.ReplyTo != id {
		t.Errorf("reply references %q, want the message %q", got.ReplyTo, id)
	}
	if got.Bot != mattyUser {
		t.Errorf("posted by %s, want matty (%s)", got.Bot, mattyUser)
	}
	// Typing is REST: the core calls it while a brain works (too briefly
	// for a script brain to show), so it is called here directly.
	if err := e.p.Typing(context.Background(), "matty", m.ChannelID); err != nil {
		t.Fatal(err)
	}
	if n := e.srv.Typing(m.ChannelID); n == 0 {
		t.Error("no typing indicator in the channel")
	}
	if err := e.p.Typing(context.Background(), "nobody", m.ChannelID); !errors.Is(err, outbox.ErrPermanent) {
		t.Errorf("Typing for an unknown bot: %v, want ErrPermanent", err)
	}
}

// TestGuildAddressing sends each row's message in its own guild channel,
// then an addressed follow-up: turns of one session run in order, so the
// first post in the channel tells whether the row's message was answered.
func TestGuildAddressing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discord.Options{}, "matty")
	tests := []struct {
		name string
		text string
		// replyToBot makes the message a reply to a message of matty's.
		replyToBot bool
		author     discordtest.User
		want       string // "" when no reply is expected
	}{
		{name: "no address", text: "hello everyone", author: alice},
		{name: "mention", text: discordtest.Mention(mattyUser) + " build it", author: alice, want: "Matty heard: build it"},
		{name: "nickname mention", text: discordtest.NickMention(mattyUser) + " build it", author: alice, want: "Matty heard: build it"},
		{name: "mention mid-text", text: "hey " + discordtest.Mention(mattyUser) + ", build it", author: alice, want: "Matty heard: hey build it"},
		{name: "reply to the bot", text: "and test it", replyToBot: true, author: alice, want: "Matty heard: and test it"},
		{name: "mention of someone else", text: discordtest.Mention("555") + " build it", author: alice},
		{name: "mention of another bot", text: discordtest.Mention(finnUser) + " build it", author: alice},
		{name: "own message", text: discordtest.Mention(mattyUser) + " talking to myself", author: discordtest.User{ID: mattyUser, Username: "matty", Bot: true}},
		{name: "other bot", text: discordtest.Mention(mattyUser) + " from a bot", author: discordtest.User{ID: "777", Username: "otherbot", Bot: true}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e.in(t)
			channel := fmt.Sprint(5000 + i)
			if tt.replyToBot {
				e.srv.DispatchAll(e.srv.GuildMessage("42", channel, alice, discordtest.Mention(mattyUser)+" first"))
				first := e.expect(channel, "Matty heard: first")
				e.waitStored(first)
				e.srv.DispatchAll(e.srv.GuildMessage("42", channel, tt.author, tt.text).Reply(first.ID))
			} else {
				e.srv.DispatchAll(e.srv.GuildMessage("42", channel, tt.author, tt.text))
			}
			e.srv.DispatchAll(e.srv.GuildMessage("42", channel, alice, discordtest.Mention(mattyUser)+" follow-up"))
			if tt.want != "" {
				e.expect(channel, tt.want)
			}
			e.expect(channel, "Matty heard: follow-up")
		})
	}
}

// TestMentionOfAnotherBot: with both bots in a guild channel, a mention
// of finn is answered by finn alone.
func TestMentionOfAnotherBot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discord.Options{}, "matty", "finn")
	e.srv.DispatchAll(e.srv.GuildMessage("42", "600", alice, discordtest.Mention(finnUser)+" write the tests"))
	got := e.expect("600", "Finn heard: write the tests")
	if got.Bot != finnUser {
		t.Errorf("posted by %s, want finn", got.Bot)
	}
	e.quiet(300 * time.Millisecond)
}

func TestDuplicateDispatchAnsweredOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discord.Options{}, "matty")
	m := e.srv.DM(mattyToken, alice, "once")
	m.ID = "1300000000000000001"
	e.srv.Dispatch(mattyToken, m)
	e.srv.Dispatch(mattyToken, m)
	e.srv.Dispatch(mattyToken, e.srv.DM(mattyToken, alice, "after"))
	e.expect(m.ChannelID, "Matty heard: once")
	e.expect(m.ChannelID, "Matty heard: after")
	e.quiet(300 * time.Millisecond)
}

func TestBurstKeepsOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discord.Options{Pace: discord.Pace{Messages: 100, Per: time.Second}}, "matty")
	e.srv.SetRateLimit(100, time.Second)
	var channel string
	for i := 1; i <= 20; i++ {
		m := e.srv.DM(mattyToken, alice, fmt.Sprintf("message %02d", i))
		channel = m.ChannelID
		e.srv.Dispatch(mattyToken, m)
	}
	for i := 1; i <= 20; i++ {
		e.expect(channel, fmt.Sprintf("Matty heard: message %02d", i))
	}
}

// TestGatewayDropResumes drops the gateway mid-conversation: discordgo's
// session reconnects and resumes, and the messages sent meanwhile are
// replayed and answered, in order.
func TestGatewayDropResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discord.Options{}, "matty")
	m := e.srv.DM(mattyToken, alice, "one")
	e.srv.Dispatch(mattyToken, m)
	e.expect(m.ChannelID, "Matty heard: one")

	e.srv.DropConnection()
	e.srv.Dispatch(mattyToken, e.srv.DM(mattyToken, alice, "two"))
	e.srv.Dispatch(mattyToken, e.srv.DM(mattyToken, alice, "three"))
	e.expect(m.ChannelID, "Matty heard: two")
	e.expect(m.ChannelID, "Matty heard: three")
	if n := e.srv.Resumes(mattyToken); n != 1 {
		t.Errorf("resumes = %d, want 1", n)
	}
	if n := e.srv.Identifies(mattyToken); n != 1 {
		t.Errorf("identifies = %d, want 1 (the session was resumed, not replaced)", n)
	}

	// And it goes on answering on the resumed connection.
	e.srv.Dispatch(mattyToken, e.srv.DM(mattyToken, alice, "four"))
	e.expect(m.ChannelID, "Matty heard: four")
	e.quiet(200 * time.Millisecond)
}

// TestHeartbeats: with a fast heartbeat the session stays up on the
// fake's ACKs (discordgo reconnects after five intervals without one), and
// the adapter asked for the intents it needs.
func TestHeartbeats(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t)
	srv.SetHeartbeatInterval(40 * time.Millisecond)
	e := newEnvOn(t, srv, discord.Options{}, "matty")
	time.Sleep(500 * time.Millisecond)
	m := e.srv.DM(mattyToken, alice, "alive?")
	e.srv.Dispatch(mattyToken, m)
	e.expect(m.ChannelID, "Matty heard: alive?")
	if i, r := e.srv.Identifies(mattyToken), e.srv.Resumes(mattyToken); i != 1 || r != 0 {
		t.Errorf("identifies %d, resumes %d; want 1 and 0", i, r)
	}
	const want = 1<<9 | 1<<12 | 1<<15 // guild messages, direct messages, message content
	if got := e.srv.Intents(mattyToken); got != want {
		t.Errorf("intents %b, want %b", got, want)
	}
}

// TestInvalidSessionIdentifiesAgain: a resume the gateway refuses
// (INVALID_SESSION) ends in a fresh IDENTIFY, and the bot keeps working.
func TestInvalidSessionIdentifiesAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discord.Options{}, "matty")
	e.srv.InvalidateSessions()
	e.srv.DropConnection()
	eventually(t, func() bool { return e.srv.Identifies(mattyToken) == 2 && e.srv.Connected(mattyToken) }, "second identify")
	m := e.srv.DM(mattyToken, alice, "still there?")
	e.srv.Dispatch(mattyToken, m)
	e.expect(m.ChannelID, "Matty heard: still there?")
	if n := e.srv.Resumes(mattyToken); n != 0 {
		t.Errorf("resumes = %d, want 0", n)
	}
}
