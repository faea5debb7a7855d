package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/cliclient"
)

var sendCommand = &command{
	name:     "send",
	synopsis: sendSynopsis,
	summary:  "one message; print the reply, exit",
	about: `
Sends one message to BOT in a private chat, as the terminal person
cli-NAME (--as), and prints the text of every reply that answers it
within --timeout, one a line. A reply that hands the task to another
bot counts, and so do the hand-off's later messages that reach this
person's terminal chats (the target's reply when it comes here, the
"finished" notice): send waits for the hand-off to end. TEXT "-" reads
the message from standard input. Flags may come before or after the
arguments; "--" ends the flags (send finn -- "-5 degrees?").

Exit status: 0 a reply came; 1 none came within --timeout; 2 a usage
or connection error, a refusal (unknown_bot, not_allowed) or a wrong
token, with a one-line reason on standard error.

Example:
  switchboard send finnshipley "status of the login page?"
  echo "hello" | switchboard send mattyatlas - --json`,
	env:   termEnv,
	args:  true,
	flags: sendFlags,
	run:   runSend,
}

const sendSynopsis = `BOT "text"|- [--timeout 60s] [--json]`

func sendFlags(fs *flag.FlagSet) {
	clientFlags(fs)
	fs.Duration("timeout", 60*time.Second, "how long to wait for replies")
	fs.Bool("json", false, "print the reply message frames as JSON lines instead of their text")
}

// maxSendText bounds what send - reads from standard input: the widget's
// frame limit.
const maxSendText = 60000

func runSend(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		return usageError(stderr, "send", sendSynopsis, "want BOT and the text (or - for standard input), got %d argument(s)", len(args))
	}
	bot, text := args[0], args[1]
	if text == "-" {
		b, err := io.ReadAll(io.LimitReader(stdin, maxSendText+1))
		if err != nil {
			fmt.Fprintln(stderr, "switchboard send: reading standard input:", err)
			return 2
		}
		if len(b) > maxSendText {
			fmt.Fprintf(stderr, "switchboard send: the message on standard input is over %d bytes\n", maxSendText)
			return 2
		}
		text = strings.TrimRight(string(b), "\n")
	}
	if strings.TrimSpace(text) == "" {
		return usageError(stderr, "send", sendSynopsis, "the message is empty")
	}
	timeout := fs.Lookup("timeout").Value.(flag.Getter).Get().(time.Duration)
	asJSON := fs.Lookup("json").Value.String() == "true"

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	conn, err := dialFlags(ctx, fs)
	if err != nil {
		fmt.Fprintln(stderr, "switchboard send:", err)
		return 2
	}
	defer conn.Close()
	clientID := uuid.NewString()
	if err := conn.Send(map[string]any{"type": "send", "bot": bot, "text": text, "client_id": clientID}); err != nil {
		fmt.Fprintln(stderr, "switchboard send: the gateway closed the connection:", err)
		return 2
	}
	w := &replyWaiter{clientID: clientID, open: map[string]bool{}}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		var settle <-chan time.Time
		if d, ok := w.settleIn(); ok {
			settle = time.After(d)
		}
		select {
		case f, ok := <-conn.Frames():
			if !ok {
				fmt.Fprintf(stderr, "switchboard send: the gateway closed the connection (%v)\n", conn.Err())
				return 2
			}
			reply, err := w.take(f)
			if err != nil {
				if f.Code == "unknown_bot" {
					err = fmt.Errorf("%w; the bots are %s", err, strings.Join(botList(conn.Hello.Bots), ", "))
				}
				fmt.Fprintln(stderr, "switchboard send:", err)
				return 2
			}
			if reply {
				if asJSON {
					fmt.Fprintln(stdout, string(f.Raw))
				} else {
					fmt.Fprintln(stdout, f.Text)
				}
			}
		case <-settle:
			return 0
		case <-deadline.C:
			if w.replies == 0 {
				fmt.Fprintf(stderr, "switchboard send: no reply from %s within %s\n", bot, timeout)
				return 1
			}
			return 0
		case <-ctx.Done():
			return w.exitCode()
		}
	}
}

// replyWaiter follows the frames that answer one sent message: its ack,
// the replies whose reply_to is its ID, and the hand-offs those replies
// start, with their later messages.
type replyWaiter struct {
	clientID string
	msgID    int64
	replies  int
	// open holds the hand-offs started by a reply, true once ended;
	// endedAt is when the last one ended.
	open    map[string]bool
	endedAt time.Time
	lastAt  time.Time
}

// handoffGrace is how long send waits, after the hand-offs it follows
// have ended, for their messages (the target's reply, the notice), which
// the gateway stores with the status change.
const handoffGrace = 1500 * time.Millisecond

// take reads one frame; reply says whether it is a reply to print. An
// error frame for the message is a refusal.
func (w *replyWaiter) take(f cliclient.Frame) (reply bool, err error) {
	switch f.Type {
	case "ack":
		if f.ClientID == w.clientID {
			w.msgID = f.ID
		}
	case "error":
		if f.ClientID == w.clientID || f.ClientID == "" {
			return false, fmt.Errorf("%s: %s", f.Code, f.Message)
		}
	case "delegation":
		if d := f.Delegation; d != nil {
			if _, ours := w.open[d.ID]; ours && ended(d.Status) {
				w.open[d.ID] = true
				w.endedAt = time.Now()
			}
		}
	case "message":
		if w.msgID == 0 || f.From.Kind == "human" {
			return false, nil
		}
		ours := f.ReplyTo == w.msgID
		if d := f.Delegation; d != nil {
			if _, known := w.open[d.ID]; known {
				ours = true
			} else if ours {
				w.open[d.ID] = ended(d.Status)
			}
			if ended(d.Status) && ours {
				w.open[d.ID] = true
				w.endedAt = time.Now()
			}
		}
		if ours {
			w.replies++
			w.lastAt = time.Now()
		}
		return ours, nil
	}
	return false, nil
}

// settleIn says how long to wait before send is done: a reply came and
// every hand-off it follows has ended, a grace period ago.
func (w *replyWaiter) settleIn() (time.Duration, bool) {
	if w.replies == 0 {
		return 0, false
	}
	for _, done := range w.open {
		if !done {
			return 0, false
		}
	}
	if len(w.open) == 0 {
		return 0, true
	}
	return max(0, handoffGrace-time.Since(w.endedAt)), true
}

func (w *replyWaiter) exitCode() int {
	if w.replies > 0 {
		return 0
	}
	return 1
}

// ended reports whether a hand-off status is final.
func ended(status string) bool {
	switch status {
	case "done", "failed", "refused":
		return true
	}
	return false
}

// botList is the IDs of bots.
func botList(bots []cliclient.Bot) []string {
	ids := make([]string, 0, len(bots))
	for _, b := range bots {
		ids = append(ids, b.ID)
	}
	return ids
}
