package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/cliclient"
)

const convSynopsis = "new NAME --with BOT,BOT [--open] | list | show ID [--limit N] | join ID | invite ID USER"

var convCommand = &command{
	name:     "conv",
	synopsis: convSynopsis,
	summary:  "make, list, read and share group conversations",
	about: `
Manages the terminal person's conversations (cli-NAME, --as):

  new NAME --with BOT,BOT [--open]
      make the group conversation NAME with those bots, you its first
      member; --open lets anyone join, else members invite others
  list
      your conversations: ID, bots, time of the last message, newest
      first (rooms you are a member of and your private chats)
  show ID [--limit N]
      the newest N messages, oldest first, as TIME FROM: TEXT
  join ID
      become a member of an open conversation, or one you were invited to
  invite ID USER
      make USER (a master user ID or a platform ID such as cli-ann or
      web-bryan) a member; only members may invite

Enter a conversation with switchboard chat --conv ID. Output is one
line per item, in columns, so that grep and cut work on it.

Exit status: 0 done; 1 refused (not_allowed, unknown_chat, a name
taken), with the reason on standard error; 2 a usage or connection
error.

Examples:
  switchboard conv new standup --with mattyatlas,finnshipley
  switchboard conv invite standup web-bryan
  switchboard conv show standup --limit 5`,
	env:   termEnv,
	args:  true,
	flags: convFlags,
	run:   runConv,
}

func convFlags(fs *flag.FlagSet) {
	clientFlags(fs)
	fs.String("with", "", "conv new: the conversation's bots, comma-separated `IDs`")
	fs.Bool("open", false, "conv new: anyone may join, not only members and those they invite")
	fs.Int("limit", 20, "conv show: how many of the newest messages (at most 500)")
}

// convArgs is how many arguments each subcommand takes, and its flags.
var convArgs = map[string]struct {
	n     int
	flags []string
}{
	"new": {1, []string{"with", "open"}}, "list": {0, nil}, "show": {1, []string{"limit"}},
	"join": {1, nil}, "invite": {2, nil},
}

func runConv(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return usageError(stderr, "conv", convSynopsis, "name what to do: new, list, show, join or invite")
	}
	sub, args := args[0], args[1:]
	spec, ok := convArgs[sub]
	if !ok {
		return usageError(stderr, "conv", convSynopsis, "unknown subcommand %q", sub)
	}
	if len(args) != spec.n {
		return usageError(stderr, "conv", convSynopsis, "%s takes %d argument(s), got %d", sub, spec.n, len(args))
	}
	var wrong string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "with", "open", "limit":
			if !containsString(spec.flags, f.Name) {
				wrong = f.Name
			}
		}
	})
	if wrong != "" {
		return usageError(stderr, "conv", convSynopsis, "--%s is not a flag of conv %s", wrong, sub)
	}
	with := splitList(fs.Lookup("with").Value.String())
	if sub == "new" && len(with) == 0 {
		return usageError(stderr, "conv", convSynopsis, "conv new needs --with BOT,BOT")
	}
	limit := fs.Lookup("limit").Value.(flag.Getter).Get().(int)
	if limit < 1 || limit > 500 {
		return usageError(stderr, "conv", convSynopsis, "--limit must be 1 to 500")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if sub == "list" {
		return convList(ctx, fs, stdout, stderr)
	}
	conn, err := dialFlags(ctx, fs)
	if err != nil {
		fmt.Fprintln(stderr, "switchboard conv:", err)
		return 2
	}
	defer conn.Close()
	var code int
	switch sub {
	case "new":
		code, err = convNew(conn, args[0], with, fs.Lookup("open").Value.String() == "true", stdout)
	case "show":
		code, err = convShow(conn, args[0], limit, stdout)
	case "join":
		code, err = convJoin(conn, args[0], stdout)
	case "invite":
		code, err = convInvite(conn, args[0], args[1], stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "switchboard conv %s: %v\n", sub, err)
	}
	return code
}

// refused is the exit code and error of a refusal frame; anything else
// that went wrong is a connection error (2).
func refused(err error) (int, error) {
	var r *refusal
	if errors.As(err, &r) {
		return 1, err
	}
	return 2, err
}

// refusal is an error frame's code and message.
type refusal struct{ code, message string }

func (r *refusal) Error() string { return r.code + ": " + r.message }

// ask sends frame and waits for want, turning an error frame into a
// *refusal.
func ask(conn *cliclient.Conn, frame map[string]any, want string) (cliclient.Frame, error) {
	frame["client_id"] = uuid.NewString()
	f, err := request(conn, frame, want)
	if err != nil && f.Type == "error" {
		return f, &refusal{code: f.Code, message: f.Message}
	}
	return f, err
}

// exists reports whether the conversation id is there, asking for its
// last message: a closed one of others is there too.
func exists(conn *cliclient.Conn, id string) (bool, error) {
	_, err := ask(conn, map[string]any{"type": "history", "chat": id, "limit": 1}, "history")
	var r *refusal
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &r) && r.code == "unknown_chat":
		return false, nil
	case errors.As(err, &r) && r.code == "not_allowed":
		return true, nil
	}
	return false, err
}

func convNew(conn *cliclient.Conn, name string, bots []string, open bool, stdout io.Writer) (int, error) {
	there, err := exists(conn, name)
	if err != nil {
		return refused(err)
	}
	if there {
		return 1, fmt.Errorf("a conversation called %q exists; join it with `switchboard conv join %s`", name, name)
	}
	f, err := ask(conn, map[string]any{"type": "join", "chat": name, "bots": bots, "open": open}, "joined")
	if err != nil {
		return refused(err)
	}
	kind := "closed: members invite others"
	if open {
		kind = "open: anyone may join"
	}
	fmt.Fprintf(stdout, "created %s with %s (%s)\n", f.Chat, botIDs(f.Bots), kind)
	return 0, nil
}

func convJoin(conn *cliclient.Conn, id string, stdout io.Writer) (int, error) {
	// A join makes a room that is not there: conv new does that.
	there, err := exists(conn, id)
	if err != nil {
		return refused(err)
	}
	if !there {
		return 1, fmt.Errorf("no conversation %q; make it with `switchboard conv new %s --with BOT,BOT`", id, id)
	}
	f, err := ask(conn, map[string]any{"type": "join", "chat": id}, "joined")
	if err != nil {
		return refused(err)
	}
	fmt.Fprintf(stdout, "joined %s with %s\n", f.Chat, botIDs(f.Bots))
	return 0, nil
}

func convInvite(conn *cliclient.Conn, id, user string, stdout io.Writer) (int, error) {
	f, err := ask(conn, map[string]any{"type": "invite", "chat": id, "user": user}, "invited")
	if err != nil {
		return refused(err)
	}
	fmt.Fprintf(stdout, "invited %s to %s\n", f.User, f.Chat)
	return 0, nil
}

func convShow(conn *cliclient.Conn, id string, limit int, stdout io.Writer) (int, error) {
	frame := map[string]any{"type": "history", "chat": id, "limit": limit}
	// One's own private chat is read as the session with its bot.
	if bot, ok := strings.CutPrefix(id, conn.Hello.PlatformID+":"); ok {
		frame = map[string]any{"type": "history", "bot": bot, "limit": limit}
	}
	h, err := ask(conn, frame, "history")
	if err != nil {
		return refused(err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 1, ' ', 0)
	for _, m := range h.Messages {
		from := m.From.Name
		if from == "" {
			from = m.From.ID
		}
		text := strings.ReplaceAll(m.Text, "\n", "\n\t\t")
		fmt.Fprintf(tw, "%s\t%s:\t%s\n", localTime(m.Time), from, text)
	}
	tw.Flush()
	return 0, nil
}

// convList prints the person's conversations from the admin API.
func convList(ctx context.Context, fs *flag.FlagSet, stdout, stderr io.Writer) int {
	o, err := flagOptions(fs)
	if err == nil {
		var list []cliclient.Conversation
		if list, err = cliclient.Conversations(ctx, o); err == nil {
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tBOTS\tLAST MESSAGE")
			for _, c := range list {
				last := "-"
				if c.LastMessageAt != nil {
					last = localTime(*c.LastMessageAt)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", c.ID, strings.Join(c.Bots, ","), last)
			}
			tw.Flush()
			return 0
		}
	}
	fmt.Fprintln(stderr, "switchboard conv list:", err)
	return 2
}

// localTime shows an RFC 3339 time in the local zone, to the second.
func localTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// botIDs is "a,b" of a joined frame's bots.
func botIDs(bots []cliclient.Bot) string {
	ids := make([]string, 0, len(bots))
	for _, b := range bots {
		ids = append(ids, b.ID)
	}
	return strings.Join(ids, ",")
}

// splitList splits "a, b,c" at commas, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
