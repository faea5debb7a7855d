package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// command is one of the binary's commands: what its help says and what
// it runs.
type command struct {
	name string
	// synopsis follows "switchboard NAME" in the usage line.
	synopsis string
	// summary is its line in the list of commands.
	summary string
	// about is the text of its --help after the usage line, before the
	// flags; env, when set, follows the flags.
	about, env string
	// flags defines its flags on fs; nil for none.
	flags func(fs *flag.FlagSet)
	// run runs it with the flags parsed; args are what is left.
	run func(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int
	// args is true for a command that takes arguments, among which its
	// flags may come (term.go's parseInterleaved).
	args bool
}

// commands lists the commands in the order the usage shows them.
var commands = []*command{serveCommand, checkCommand, chatCommand, sendCommand, convCommand, dbCopyCommand, versionCommand}

// lookupCommand returns the command called name, or nil.
func lookupCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// usage is the text of `switchboard --help`.
func usage() string {
	var b strings.Builder
	b.WriteString("switchboard — a chat gateway for teams of AI bots\n\nUsage:\n")
	for _, c := range commands {
		line := strings.TrimSpace(c.name + " " + c.synopsis)
		if len(line) > 26 {
			fmt.Fprintf(&b, "  switchboard %s\n  %-38s %s\n", line, "", c.summary)
			continue
		}
		fmt.Fprintf(&b, "  switchboard %-26s %s\n", line, c.summary)
	}
	b.WriteString("\nRun 'switchboard COMMAND --help' for a command's flags and defaults.\n")
	return b.String()
}

// runCommand parses c's flags from args and runs it. --help or -h
// prints c's help on stdout and returns 0; an unknown flag or an
// argument c does not take prints the reason and c's usage on stderr and
// returns 2.
func runCommand(c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flagSet()
	fs.SetOutput(stderr) // for the flag package's one-line reason
	var err error
	if c.args {
		args, err = parseInterleaved(fs, args)
	} else {
		err = fs.Parse(args)
		args = fs.Args()
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.printHelp(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "\n%s", c.usageLine())
		fmt.Fprintf(stderr, "Run 'switchboard %s --help' for more.\n", c.name)
		return 2
	}
	if len(args) > 0 && !c.args {
		fmt.Fprintf(stderr, "switchboard %s: unexpected argument %q\n\n%s", c.name, args[0], c.usageLine())
		fmt.Fprintf(stderr, "Run 'switchboard %s --help' for more.\n", c.name)
		return 2
	}
	return c.run(fs, args, stdout, stderr)
}

// flagSet returns a new set of c's flags. It prints nothing itself on
// --help: runCommand does, on standard output.
func (c *command) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.Usage = func() {}
	if c.flags != nil {
		c.flags(fs)
	}
	return fs
}

// usageLine is "Usage: switchboard NAME SYNOPSIS".
func (c *command) usageLine() string {
	return strings.TrimSpace("Usage: switchboard "+c.name+" "+c.synopsis) + "\n"
}

// printHelp writes c's help: usage, what it does, its flags with their
// defaults as they are in this process, and the environment it reads.
func (c *command) printHelp(w io.Writer) {
	fmt.Fprintf(w, "%s\n%s\n", c.usageLine(), strings.TrimSpace(c.about))
	fmt.Fprintln(w, "\nFlags:")
	c.flagSet().VisitAll(func(f *flag.Flag) {
		arg, text := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s %s\n", f.Name, arg)
		fmt.Fprintf(w, "%s", indent(wrap(text, 66)+fmt.Sprintf("default: %q\n", f.DefValue), "        "))
	})
	fmt.Fprintf(w, "  -h, --help\n        show this help\n")
	if c.env != "" {
		fmt.Fprintf(w, "\nEnvironment:\n%s", indent(strings.TrimSpace(c.env)+"\n", "  "))
	}
}

// configFlag adds --config to fs. Its default is $SWITCHBOARD_CONFIG as
// set when the flag is made, else the working directory.
func configFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("SWITCHBOARD_CONFIG")
	if def == "" {
		def = "."
	}
	return fs.String("config", def, "read bots.yaml and users.yaml from `DIR`: "+
		"$SWITCHBOARD_CONFIG when set, else the working directory")
}

// wrap breaks text into lines of at most width bytes at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(text) {
		if i > 0 && line+1+len(word) > width {
			b.WriteString("\n")
			line = 0
		} else if i > 0 {
			b.WriteString(" ")
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String() + "\n"
}

// indent puts prefix before every line of text.
func indent(text, prefix string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}
