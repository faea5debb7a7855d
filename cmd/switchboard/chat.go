package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/cliclient"
)

const chatSynopsis = "BOT [BOT…] | --conv ID"

var chatCommand = &command{
	name:     "chat",
	synopsis: chatSynopsis,
	summary:  "talk from the terminal, interactively",
	about: `
Opens a chat with a running gateway as the terminal person cli-NAME
(--as). One BOT is a private chat (cli-NAME:BOT); several are a group
conversation whose ID is "cli:" and the sorted bot IDs joined by "+"
(made on first use, with you as its member); --conv ID enters an
existing conversation (see switchboard conv). In a group a bot answers
only when addressed: @id or @alias, /id, or a name in a hand-off.

Replies print as they arrive ("Finn Shipley: …") above the line you
are typing, a turn in progress as a passing "Finn Shipley is typing…"
line, hand-off changes as "[hand-off → Finn Shipley: running]" (while
it reports progress, "[hand-off → Researcher: Step 1/3: Surveying
CompetitorX]") and a help request's as "[help request → Finn Shipley:
done]". The line
editor keeps a history (up and down arrows). /quit, Ctrl-D on an empty
line or Ctrl-C leaves.

When standard input is not a terminal, chat sends each line read, prints
plain lines (no escape codes) and, at the end of input, waits up to
--timeout for the replies to what it sent.

Examples:
  switchboard chat finnshipley
  switchboard chat mattyatlas finnshipley
  switchboard chat --conv standup --as ann`,
	env:   termEnv,
	args:  true,
	flags: chatFlags,
	run:   runChat,
}

func chatFlags(fs *flag.FlagSet) {
	clientFlags(fs)
	fs.String("conv", "", "enter the existing conversation `ID` instead of naming bots")
	fs.Duration("timeout", 60*time.Second, "when standard input is not a terminal: how long to wait at its end for replies")
}

// chatTarget is where a chat's lines go: a bot's private chat or a group
// conversation.
type chatTarget struct {
	bot, conv string
	// bots are a new group's bots.
	bots []string
}

// field is the send frame's field that names the target.
func (t chatTarget) frame(text, clientID string) map[string]any {
	f := map[string]any{"type": "send", "text": text, "client_id": clientID}
	if t.bot != "" {
		f["bot"] = t.bot
	} else {
		f["chat"] = t.conv
	}
	return f
}

func runChat(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	conv := fs.Lookup("conv").Value.String()
	var target chatTarget
	switch {
	case conv != "" && len(args) > 0:
		return usageError(stderr, "chat", chatSynopsis, "give bots or --conv, not both")
	case conv != "":
		target.conv = conv
	case len(args) == 0:
		return usageError(stderr, "chat", chatSynopsis, "name a bot, several bots, or --conv ID")
	case len(args) == 1:
		target.bot = args[0]
	default:
		target.bots = args
		target.conv = cliclient.GroupID(args)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	conn, err := dialFlags(ctx, fs)
	if err != nil {
		fmt.Fprintln(stderr, "switchboard chat:", err)
		return 2
	}
	defer conn.Close()
	if target.conv != "" {
		join := map[string]any{"type": "join", "chat": target.conv, "client_id": "join"}
		if target.bots != nil {
			join["bots"] = target.bots
		}
		if f, err := request(conn, join, "joined"); err != nil {
			hint := ""
			if f.Code == "not_allowed" && target.bots != nil {
				hint = fmt.Sprintf("; make a conversation of your own with `switchboard conv new NAME --with %s`", strings.Join(target.bots, ","))
			}
			fmt.Fprintf(stderr, "switchboard chat: %s: %v%s\n", target.conv, err, hint)
			return 2
		}
	}
	if interactive(stdout) {
		stop() // Ctrl-C is a key now
		return chatTerminal(conn, target, stdout, stderr)
	}
	timeout := fs.Lookup("timeout").Value.(flag.Getter).Get().(time.Duration)
	return chatPlain(ctx, conn, target, stdout, stderr, timeout)
}

// interactive reports whether both standard input and stdout are
// terminals.
func interactive(stdout io.Writer) bool {
	in, ok := stdin.(*os.File)
	out, ok2 := stdout.(*os.File)
	return ok && ok2 && term.IsTerminal(in.Fd()) && term.IsTerminal(out.Fd())
}

// request sends a frame with client_id and waits for the frame of type
// want (or an error naming the client_id), dropping what comes between.
func request(conn *cliclient.Conn, frame map[string]any, want string) (cliclient.Frame, error) {
	if err := conn.Send(frame); err != nil {
		return cliclient.Frame{}, err
	}
	timeout := time.After(15 * time.Second)
	for {
		select {
		case f, ok := <-conn.Frames():
			if !ok {
				return cliclient.Frame{}, fmt.Errorf("the gateway closed the connection (%v)", conn.Err())
			}
			if f.Type == "error" && (f.ClientID == frame["client_id"] || f.ClientID == "") {
				return f, fmt.Errorf("%s: %s", f.Code, f.Message)
			}
			if f.Type == want {
				return f, nil
			}
		case <-timeout:
			return cliclient.Frame{}, errors.New("no answer from the gateway")
		}
	}
}

// chatLine renders a frame as the line chat prints, or "" for none.
// self is the connection's platform ID: its own messages echo nothing.
func chatLine(conn *cliclient.Conn, f cliclient.Frame, self string) string {
	switch f.Type {
	case "message":
		if f.From.Kind == "human" && f.From.ID == self {
			return ""
		}
		name := f.From.Name
		if name == "" {
			name = f.From.ID
		}
		text := f.Text
		if f.Failed {
			text += " (failed)"
		}
		for _, a := range artifactNames(f) {
			text += "\n  [file: " + a + "]"
		}
		return name + ": " + text
	case "delegation":
		if d := f.Delegation; d != nil {
			// While it runs, its newest progress report says more than
			// "running"; once it ends, its status says it.
			status := d.Status
			if p := d.Progress; p != nil && p.Text != "" && d.Status == "running" {
				status = p.Label()
			}
			if d.Kind == "help" {
				return fmt.Sprintf("[help request → %s: %s]", conn.BotName(d.To), status)
			}
			return fmt.Sprintf("[hand-off → %s: %s]", conn.BotName(d.To), status)
		}
	case "error":
		return fmt.Sprintf("! %s: %s", f.Code, f.Message)
	}
	return ""
}

// artifactNames lists the names of a message's files.
func artifactNames(f cliclient.Frame) []string {
	var out []string
	for _, a := range f.Artifacts {
		out = append(out, a.Name)
	}
	return out
}

// chatPlain is chat without a terminal: each line of standard input is
// a message; replies print as plain lines. At the end of input it waits
// for the replies to what it sent (in a group, until the gateway has been
// quiet for a few seconds) or timeout.
func chatPlain(ctx context.Context, conn *cliclient.Conn, target chatTarget, stdout, stderr io.Writer, timeout time.Duration) int {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), maxSendText)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	self := conn.Hello.PlatformID
	pending := map[string]bool{} // client IDs sent, not yet acked
	unanswered := map[int64]bool{}
	var deadline <-chan time.Time
	var quiet *time.Timer
	eof := false
	for {
		var quietC <-chan time.Time
		if quiet != nil {
			quietC = quiet.C
		}
		if eof && len(pending) == 0 && len(unanswered) == 0 && (target.bot != "" || quiet == nil) {
			return 0
		}
		select {
		case line, ok := <-lines:
			if !ok {
				eof, lines = true, nil
				deadline = time.After(timeout)
				if target.conv != "" {
					quiet = time.NewTimer(groupQuiet)
				}
				continue
			}
			if strings.TrimSpace(line) == "" {
				continue
			}
			if strings.TrimSpace(line) == "/quit" {
				return 0
			}
			id := uuid.NewString()
			pending[id] = true
			if err := conn.Send(target.frame(line, id)); err != nil {
				fmt.Fprintln(stderr, "switchboard chat: the gateway closed the connection:", err)
				return 2
			}
		case f, ok := <-conn.Frames():
			if !ok {
				fmt.Fprintf(stderr, "switchboard chat: the gateway closed the connection (%v)\n", conn.Err())
				return 2
			}
			if quiet != nil {
				quiet.Reset(groupQuiet)
			}
			switch {
			case f.Type == "ack" && pending[f.ClientID]:
				delete(pending, f.ClientID)
				if target.bot != "" {
					unanswered[f.ID] = true
				}
			case f.Type == "error" && pending[f.ClientID]:
				delete(pending, f.ClientID)
			case f.Type == "message" && f.ReplyTo != 0:
				delete(unanswered, f.ReplyTo)
			}
			if line := chatLine(conn, f, self); line != "" {
				fmt.Fprintln(stdout, line)
			}
		case <-quietC:
			quiet = nil
		case <-deadline:
			return 0
		case <-ctx.Done():
			return 0
		}
	}
}

// groupQuiet is how long a piped group chat waits, at the end of its
// input, for the gateway to be quiet: longer than the typing frames'
// four seconds.
const groupQuiet = 5 * time.Second
