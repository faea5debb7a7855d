package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyChat is the built binary's `switchboard chat` on a pseudo-terminal.
type ptyChat struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

// startPTYChat runs bin with args on a new 100×30 pseudo-terminal.
func startPTYChat(t *testing.T, bin string, args ...string) *ptyChat {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "SWITCHBOARD_ADMIN_TOKEN=")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatalf("pty: %v", err)
	}
	p := &ptyChat{t: t, cmd: cmd, tty: tty, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		tty.Close()
		<-p.done
	})
	return p
}

// escapes matches the terminal's escape sequences.
var escapes = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-B]|[=>])`)

// screen is what was written so far, escape sequences removed.
func (p *ptyChat) screen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return escapes.ReplaceAllString(p.out.String(), "")
}

// waitFor waits until the output holds want, after from (an earlier
// screen length), and returns where it ends.
func (p *ptyChat) waitFor(want string, from int) int {
	p.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		s := p.screen()
		if from <= len(s) {
			if i := strings.Index(s[from:], want); i >= 0 {
				return from + i + len(want)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.t.Fatalf("no %q on the terminal; it shows:\n%s", want, p.screen())
	return 0
}

// typeLine types text and Enter, a key at a time as a person would.
func (p *ptyChat) typeLine(text string) {
	p.t.Helper()
	if _, err := io.WriteString(p.tty, text+"\r"); err != nil {
		p.t.Fatal(err)
	}
}

// exit waits for the process to end and returns its exit code.
func (p *ptyChat) exit() int {
	p.t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- p.cmd.Wait() }()
	select {
	case err := <-errc:
		return exitCode(err)
	case <-time.After(10 * time.Second):
		p.t.Fatalf("chat did not leave; the terminal shows:\n%s", p.screen())
		return -1
	}
}

// TestChatOnATerminal drives `switchboard chat` through a pseudo-terminal:
// a private chat shows the typing line and the reply, /quit leaves;
// a group with two bots addressed with @ shows both replies in stored
// order; Ctrl-C leaves cleanly.
func TestChatOnATerminal(t *testing.T) {
	bin := buildGatewayBinary(t)
	_, flags := startTerm(t)

	t.Run("private: typing line, reply, /quit", func(t *testing.T) {
		p := startPTYChat(t, bin, append([]string{"chat", "thinker"}, flags...)...)
		at := p.waitFor("Chatting with Deep Thought as cli-bryan", 0)
		at = p.waitFor("›", at)
		p.typeLine("what is the answer?")
		at = p.waitFor("You: what is the answer?", at)
		at = p.waitFor("Deep Thought is typing…", at)
		p.waitFor("Deep Thought: pondered", at)
		p.typeLine("/quit")
		if code := p.exit(); code != 0 {
			t.Fatalf("exit %d", code)
		}
	})
	t.Run("group: two bots addressed with @, in stored order", func(t *testing.T) {
		p := startPTYChat(t, bin, append([]string{"chat", "mattyatlas", "finnshipley"}, flags...)...)
		at := p.waitFor("Chatting with cli:finnshipley+mattyatlas", 0)
		at = p.waitFor("›", at)
		p.typeLine("@finn @matty status please")
		matty := p.waitFor("Matty Atlas: Matty Atlas heard: status please", at)
		finn := p.waitFor("Finn Shipley: Finn got status please", at)
		p.tty.Write([]byte{3}) // Ctrl-C
		if code := p.exit(); code != 0 {
			t.Fatalf("exit %d", code)
		}
		// The order printed is the order stored.
		_, out, _ := runCLI(append([]string{"conv", "show", "cli:finnshipley+mattyatlas"}, flags...)...)
		storedMatty, storedFinn := strings.Index(out, "Matty Atlas heard"), strings.Index(out, "Finn got")
		if storedMatty < 0 || storedFinn < 0 || (storedMatty < storedFinn) != (matty < finn) {
			t.Errorf("printed:\n%s\nstored:\n%s", p.screen(), out)
		}
	})
	t.Run("history and a hand-off", func(t *testing.T) {
		p := startPTYChat(t, bin, append([]string{"chat", "mattyatlas"}, flags...)...)
		// The session's earlier messages come first: the group's above.
		at := p.waitFor("Matty Atlas heard: status please", 0)
		at = p.waitFor("—", at)
		at = p.waitFor("›", at)
		p.typeLine("tell Finn to ship it")
		// (Status frames are pushed as the status changes; messages go
		// through the outbox: their order on the terminal may vary.)
		p.waitFor("Matty Atlas: Handing this to Finn Shipley", at)
		p.waitFor("[hand-off → Finn Shipley: running]", at)
		p.waitFor("[hand-off → Finn Shipley: done]", at)
		p.waitFor("Matty Atlas: Finn Shipley finished: Finn built: ship it", at)
		p.tty.Write([]byte{4}) // Ctrl-D on an empty line
		if code := p.exit(); code != 0 {
			t.Fatalf("exit %d", code)
		}
	})
}
