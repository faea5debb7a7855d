package prompt

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// at is a fixed time for history entries.
var at = time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)

// bot is Matty Atlas, the example team's architect.
var bot = brains.Bot{
	ID:   "mattyatlas",
	Name: "Matty Atlas",
	Persona: "You are Matty Atlas, the team's architect.\n" +
		"You answer briefly and draw boxes before code.",
}

// mates is who Matty may hand work to.
var mates = []brains.Mate{
	{ID: "finnshipley", Name: "Finn Shipley", Summary: "You are Finn Shipley, who builds and ships features."},
	{ID: "priest", Name: "Priest", Summary: "You are Priest, the reviewer."},
}

// privateTurn is a private chat on Telegram with history, a team and an
// injected context block.
func privateTurn() brains.Turn {
	return brains.Turn{
		SessionID: "s-private",
		Bot:       bot,
		User:      brains.User{ID: "user-bryan", Name: "Bryan"},
		Platform:  "telegram",
		Text:      "What should we build first?",
		History: []brains.Entry{
			{Kind: "human", From: "Bryan", Text: "hi Matty", Time: at},
			{Kind: "bot", From: "Matty Atlas", Text: "Hello Bryan. What are we designing?", Time: at.Add(time.Second)},
			{Kind: "human", From: "Bryan", Text: "A login page.\nWith passkeys.", Time: at.Add(2 * time.Second)},
			{Kind: "system", From: "delegation", Text: "[Bot @finnshipley completed] Task: scaffold the repo Result: done", Time: at.Add(3 * time.Second)},
		},
		Team: mates,
		Context: []brains.Block{
			{Title: "Findings", Body: "- The team prefers Go.\n- Deploys go to Fly.io."},
		},
	}
}

// groupTurn is a group chat on Discord with the group's recent talk.
func groupTurn() brains.Turn {
	return brains.Turn{
		SessionID: "s-group",
		Bot:       bot,
		User:      brains.User{ID: "user-ann", Name: "Ann"},
		Platform:  "discord",
		Group:     true,
		Text:      "Matty, which database?",
		History: []brains.Entry{
			{Kind: "human", From: "Ann", Text: "morning all", Time: at},
			{Kind: "bot", From: "Matty Atlas", Text: "Morning Ann.", Time: at.Add(time.Second)},
		},
		GroupHistory: []brains.Entry{
			{Kind: "human", From: "Ann", Text: "morning all", Time: at},
			{Kind: "bot", From: "Matty Atlas", Text: "Morning Ann.", Time: at.Add(time.Second)},
			{Kind: "human", From: "Bob", Text: "we need to store sessions\nsomewhere durable", Time: at.Add(2 * time.Second)},
			{Kind: "bot", From: "Priest", Text: "Whatever it is, it needs backups.", Time: at.Add(3 * time.Second)},
		},
		Team: mates[:1],
	}
}

// delegatedTurn is a task Matty handed to Finn with an input and an
// expected output.
func delegatedTurn() brains.Turn {
	return brains.Turn{
		SessionID: "s-finn",
		Bot: brains.Bot{ID: "finnshipley", Name: "Finn Shipley",
			Persona: "You are Finn Shipley, who builds and ships features."},
		User:     brains.User{ID: "user-bryan", Name: "Bryan"},
		Platform: "telegram",
		Text:     "list our three main competitors",
		History: []brains.Entry{
			{Kind: "human", From: "Bryan", Text: "ship it when green", Time: at},
			{Kind: "bot", From: "Finn Shipley", Text: "Will do.", Time: at.Add(time.Second)},
		},
		Delegation: &brains.Delegation{
			ID: "dlg-1", From: "Matty Atlas", FromID: "mattyatlas", Depth: 1,
			Task: "list our three main competitors",
			Wrapper: "DELEGATED TASK FROM MATTY ATLAS\nUser: Bryan\nTask: list our three main competitors\n\n" +
				"Recent context from Matty Atlas conversation:\n- [Human: Bryan] who are we up against?\n\n" +
				"Please complete this task and respond directly.",
			Inputs: []brains.Artifact{
				{ID: "art-1", Name: "notes.md", MediaType: "text/markdown", Content: []byte("# Market\nWe sell bots.\n")},
				{ID: "art-2", Name: "logo.png", MediaType: "image/png", Content: []byte{0x89, 'P', 'N', 'G', 0xff, 0xfe}},
			},
			Expected: []brains.Expected{{Name: "competitors.json", MediaType: "application/json"}, {Name: "summary.md"}},
		},
	}
}

// helperTurn is Finn answering Matty's help request.
func helperTurn() brains.Turn {
	tn := delegatedTurn()
	tn.Delegation = nil
	tn.Text = "what's the auth pattern?"
	tn.Help = &brains.Help{ID: "dlg-2", From: "Matty Atlas", FromID: "mattyatlas", Question: "what's the auth pattern?",
		Wrapper: "HELP REQUEST FROM MATTY ATLAS\nUser: Bryan\nQuestion: what's the auth pattern?\n\n" +
			"Answer Matty Atlas; your answer is not shown to the user."}
	return tn
}

// answeredTurn is Matty's follow-up on Finn's answer.
func answeredTurn() brains.Turn {
	tn := privateTurn()
	tn.Text = "JWT with 24h expiry"
	tn.Help = &brains.Help{ID: "dlg-2", From: "Finn Shipley", FromID: "finnshipley", Question: "what's the auth pattern?",
		Answer: "JWT with 24h expiry"}
	return tn
}

// chainTurn is Matty answering Priest in the group, the closing step of
// a bot-to-bot chain Ann started.
func chainTurn() brains.Turn {
	tn := groupTurn()
	tn.Text = "Matty, backups first or the schema?"
	tn.Crossbot = &brains.Crossbot{Length: 3, Closing: true, From: "Priest", FromID: "priest"}
	return tn
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		turn brains.Turn
		opts Options
	}{
		{"private", privateTurn(), Options{}},
		{"group", groupTurn(), Options{}},
		{"delegated", delegatedTurn(), Options{Workdir: true}},
		{"delegated_inline_tool", delegatedTurn(), Options{DelegateTool: true}},
		{"help", helperTurn(), Options{Workdir: true}},
		{"help_answered", answeredTurn(), Options{}},
		{"chain_closing", chainTurn(), Options{}},
	}
	tests[3].turn.Team = mates[1:]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := dump(Build(tt.turn, tt.opts))
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./brains/prompt -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("prompt differs from %s (run with -update if intended)\n--- got ---\n%s", path, got)
			}
		})
	}
}

// dump renders a Prompt for a golden file: the structured form a chat API
// gets, then the flat form a CLI gets.
func dump(p Prompt) string {
	var sb strings.Builder
	sb.WriteString("######## SYSTEM\n")
	sb.WriteString(p.System)
	sb.WriteString("\n######## MESSAGES\n")
	for _, m := range p.Messages {
		fmt.Fprintf(&sb, "--- %s (%s)\n%s\n", m.Role, m.Name, m.Content)
	}
	sb.WriteString("######## TEXT\n")
	sb.WriteString(p.Text())
	return sb.String()
}

func TestBlockOrder(t *testing.T) {
	tn := delegatedTurn()
	tn.Group = true
	tn.GroupHistory = groupTurn().GroupHistory
	tn.Team = mates
	tn.Context = []brains.Block{{Title: "insights", Body: "x"}, {Title: "", Body: "y"}, {Title: "empty", Body: "  "}}
	sys := Build(tn, Options{}).System
	order := []string{"PERSONA", "CHAT", "TEAM", "INSIGHTS", "CONTEXT", "GROUP CHAT", "DELEGATED TASK", "INPUTS", "EXPECTED OUTPUTS"}
	last := -1
	for _, title := range order {
		i := strings.Index(sys, "=== "+title+" ===\n")
		if i < 0 {
			t.Fatalf("block %s missing from:\n%s", title, sys)
		}
		if i < last {
			t.Errorf("block %s out of order", title)
		}
		last = i
	}
	if strings.Contains(sys, "=== EMPTY ===") {
		t.Error("a block with an empty body was rendered")
	}
}

func TestRoles(t *testing.T) {
	tn := privateTurn()
	tn.History = append(tn.History,
		brains.Entry{Kind: "bot", From: "Priest", Text: "I reviewed it."},
		brains.Entry{Kind: "odd", From: "", Text: "?"},
	)
	p := Build(tn, Options{})
	var got []string
	for _, m := range p.Messages {
		got = append(got, m.Role+":"+m.Content)
	}
	want := []string{
		"user:hi Matty",
		"assistant:Hello Bryan. What are we designing?",
		"user:A login page.\nWith passkeys.",
		"system:[Bot @finnshipley completed] Task: scaffold the repo Result: done",
		"user:[Bot: Priest] I reviewed it.", // another bot's words are not the assistant's
		"system:?",
		"user:What should we build first?",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("messages:\n got %q\nwant %q", got, want)
	}
}

// The shared findings are one block in SPEC §10.2's own format, after
// the team and before the injected context, and absent when there are
// none.
func TestSharedFindings(t *testing.T) {
	tn := privateTurn()
	tn.Findings = []brains.Finding{
		{Bot: "Matty Atlas", BotID: "mattyatlas", Severity: "high", Text: "The auth module uses JWT with 24h expiry"},
		{Bot: "Finn Shipley", BotID: "finnshipley", Severity: "medium", Text: "Race in reconnect\nsee ws.go", Stage: "diverge"},
	}
	sys := Build(tn, Options{}).System
	want := "SHARED FINDINGS (newest last)\n" +
		"1. [Matty Atlas] high: The auth module uses JWT with 24h expiry\n" +
		"2. [Finn Shipley] medium: Race in reconnect\n  see ws.go"
	i := strings.Index(sys, "\n\n"+want+"\n\n")
	if i < 0 {
		t.Fatalf("no findings block %q in:\n%s", want, sys)
	}
	if team, ctx := strings.Index(sys, "=== TEAM ==="), strings.Index(sys, "=== FINDINGS ==="); !(team < i && i < ctx) {
		t.Errorf("findings block at %d, want between the team (%d) and the context (%d)", i, team, ctx)
	}
	tn.Findings = nil
	if sys := Build(tn, Options{}).System; strings.Contains(sys, "SHARED FINDINGS") {
		t.Errorf("a findings block without findings:\n%s", sys)
	}
}

// The insights of other bots are one block in SPEC §10.4's own format,
// after the shared findings and before the injected context, and absent
// when there are none.
func TestInsightsBlock(t *testing.T) {
	tn := privateTurn()
	tn.Findings = []brains.Finding{{Bot: "Priest", BotID: "priest", Severity: "low", Text: "a finding"}}
	tn.Insights = []brains.Insight{
		{Bot: "Elena", BotID: "elena", Kind: "epiphany", Text: "User expressed excitement about new job", Confidence: 0.85},
		{Bot: "Finn Shipley", BotID: "finnshipley", Kind: "dream", Text: "Bryan flies\nover the city", Confidence: 0.9},
	}
	sys := Build(tn, Options{}).System
	want := "[INSIGHTS FROM OTHER CHARACTERS]\n" +
		"- Elena noticed: User expressed excitement about new job\n" +
		"- Finn Shipley noticed: Bryan flies\n  over the city"
	i := strings.Index(sys, "\n\n"+want+"\n\n")
	if i < 0 {
		t.Fatalf("no insights block %q in:\n%s", want, sys)
	}
	if findings, ctx := strings.Index(sys, "SHARED FINDINGS"), strings.Index(sys, "=== FINDINGS ==="); !(findings < i && i < ctx) {
		t.Errorf("insights block at %d, want between the shared findings (%d) and the context (%d)", i, findings, ctx)
	}
	tn.Insights = nil
	if sys := Build(tn, Options{}).System; strings.Contains(sys, "INSIGHTS FROM OTHER CHARACTERS") {
		t.Errorf("an insights block without insights:\n%s", sys)
	}
}
