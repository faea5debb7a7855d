package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/cliclient"
)

// The interactive chat is a bubbletea program: what arrives is printed
// above it (tea.Println, so the line being typed is redrawn, never
// garbled), and its view is the passing "… is typing" line and the line
// editor.

// typingFor is how long a typing line stays after the last typing frame
// (the gateway repeats them every four seconds while a turn runs).
const typingFor = 6 * time.Second

// historyShown is how many earlier messages a chat starts with.
const historyShown = 10

// chatModel is the interactive chat's state.
type chatModel struct {
	conn   *cliclient.Conn
	target chatTarget
	input  textinput.Model
	// lines are the lines sent, oldest first, for the up and down keys;
	// at is the one shown (len(lines): the new line).
	lines []string
	at    int
	draft string
	// typing holds the bots whose turn runs, until when.
	typing map[string]time.Time
	// queue holds the lines to print, in the order they came; printing
	// is true while a batch of them is being printed.
	queue    []string
	printing bool
	// width is the terminal's, which printed lines are wrapped to at
	// spaces; 0 until known.
	width int
	err   error
}

type (
	frameMsg   cliclient.Frame
	closedMsg  struct{ err error }
	tickMsg    time.Time
	printedMsg struct{}
)

func newChatModel(conn *cliclient.Conn, target chatTarget) chatModel {
	in := textinput.New()
	in.Prompt = "› "
	in.Placeholder = "a message; /quit leaves"
	if target.conv != "" {
		in.Placeholder = "a message (@bot to address one); /quit leaves"
	}
	in.CharLimit = maxSendText
	in.Focus()
	return chatModel{conn: conn, target: target, input: in, typing: map[string]time.Time{}}
}

func (m chatModel) Init() tea.Cmd { return tea.Batch(textinput.Blink, tick()) }

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m chatModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		switch msg.Type {
		case tea.KeyCtrlC:
			return m, tea.Quit
		case tea.KeyCtrlD:
			if m.input.Value() == "" {
				return m, tea.Quit
			}
		case tea.KeyUp, tea.KeyDown:
			m.recall(msg.Type == tea.KeyUp)
			return m, nil
		case tea.KeyEnter:
			return m.submit()
		}
	case frameMsg:
		f := cliclient.Frame(msg)
		switch f.Type {
		case "typing":
			m.typing[m.conn.BotName(f.Bot)] = time.Now().Add(typingFor)
			return m, nil
		case "message":
			if f.From.Kind == "bot" {
				delete(m.typing, f.From.Name)
			}
		}
		if line := chatLine(m.conn, f, m.conn.Hello.PlatformID); line != "" {
			return m.print(line)
		}
		return m, nil
	case printedMsg:
		m.printing = false
		return m.print()
	case tea.WindowSizeMsg:
		m.width = msg.Width
		m.input.Width = max(10, msg.Width-len(m.input.Prompt)-1)
		return m, nil
	case tickMsg:
		now := time.Time(msg)
		for name, until := range m.typing {
			if now.After(until) {
				delete(m.typing, name)
			}
		}
		return m, tick()
	case closedMsg:
		m.err = msg.err
		return m, tea.Quit
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return m, cmd
}

// submit sends the typed line, or leaves on /quit.
func (m chatModel) submit() (tea.Model, tea.Cmd) {
	text := m.input.Value()
	if strings.TrimSpace(text) == "" {
		return m, nil
	}
	if strings.TrimSpace(text) == "/quit" {
		return m, tea.Quit
	}
	m.input.Reset()
	if len(m.lines) == 0 || m.lines[len(m.lines)-1] != text {
		m.lines = append(m.lines, text)
	}
	m.at, m.draft = len(m.lines), ""
	if err := m.conn.Send(m.target.frame(text, uuid.NewString())); err != nil {
		m.err = err
		return m, tea.Quit
	}
	return m.print("You: " + text)
}

// print queues lines and prints what is queued unless a batch is being
// printed. bubbletea runs commands concurrently, so two tea.Println
// commands may print out of order: one batch at a time, each followed by
// a printedMsg, keeps the order the frames came in, which is the order
// the messages were stored.
func (m chatModel) print(lines ...string) (tea.Model, tea.Cmd) {
	m.queue = append(m.queue, lines...)
	if m.printing || len(m.queue) == 0 {
		return m, nil
	}
	batch := strings.Join(m.queue, "\n")
	if m.width > 10 {
		batch = ansi.Wrap(batch, m.width-1, "")
	}
	m.queue, m.printing = nil, true
	return m, tea.Sequence(tea.Println(batch), func() tea.Msg { return printedMsg{} })
}

// recall shows the previous (up) or next line sent.
func (m *chatModel) recall(up bool) {
	if m.at == len(m.lines) {
		m.draft = m.input.Value()
	}
	switch {
	case up && m.at > 0:
		m.at--
	case !up && m.at < len(m.lines):
		m.at++
	default:
		return
	}
	if m.at == len(m.lines) {
		m.input.SetValue(m.draft)
	} else {
		m.input.SetValue(m.lines[m.at])
	}
	m.input.CursorEnd()
}

func (m chatModel) View() string {
	var b strings.Builder
	names := make([]string, 0, len(m.typing))
	for name := range m.typing {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		b.WriteString(name + " is typing…\n")
	}
	b.WriteString(m.input.View())
	return b.String()
}

// chatTerminal runs the interactive chat until the person leaves.
func chatTerminal(conn *cliclient.Conn, target chatTarget, stdout, stderr io.Writer) int {
	where := target.conv
	if target.bot != "" {
		where = conn.BotName(target.bot)
	}
	fmt.Fprintf(stdout, "Chatting with %s as %s. /quit or Ctrl-D leaves.\n", where, conn.Hello.PlatformID)
	showHistory(conn, target, stdout)
	p := tea.NewProgram(newChatModel(conn, target), tea.WithInput(stdin), tea.WithOutput(stdout))
	go func() {
		for f := range conn.Frames() {
			p.Send(frameMsg(f))
		}
		p.Send(closedMsg{err: conn.Err()})
	}()
	final, err := p.Run()
	if err != nil {
		fmt.Fprintln(stderr, "switchboard chat:", err)
		return 2
	}
	if m, ok := final.(chatModel); ok && m.err != nil {
		fmt.Fprintf(stderr, "switchboard chat: the gateway closed the connection (%v)\n", m.err)
		return 2
	}
	return 0
}

// showHistory prints the chat's latest messages before the prompt.
func showHistory(conn *cliclient.Conn, target chatTarget, stdout io.Writer) {
	f := map[string]any{"type": "history", "limit": historyShown, "client_id": "history"}
	if target.bot != "" {
		f["bot"] = target.bot
	} else {
		f["chat"] = target.conv
	}
	h, err := request(conn, f, "history")
	if err != nil {
		fmt.Fprintln(stdout, "!", err)
		return
	}
	for _, m := range h.Messages {
		m.Type = "message"
		if line := chatLine(conn, m, ""); line != "" {
			fmt.Fprintln(stdout, line)
		}
	}
	if len(h.Messages) > 0 {
		fmt.Fprintln(stdout, "—")
	}
}
