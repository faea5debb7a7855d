package gossip_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
	"github.com/switchboard-chat/switchboard/chat"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/store/sqlite"
	"github.com/switchboard-chat/switchboard/world/gossip"
)

// cast is a team and its people, as the gateway's roster and directory
// would give them.
type cast struct {
	mu     sync.Mutex
	bots   []gossip.Bot
	people map[string]gossip.Person
}

func (c *cast) GossipBots() []gossip.Bot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.bots)
}

func (c *cast) GossipPerson(id string) gossip.Person {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.people[id]; ok {
		return p
	}
	return gossip.Person{Share: true}
}

func (c *cast) setPerson(id string, p gossip.Person) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.people[id] = p
}

// team is elena (who is told), finn, priest and zed, and a public bot.
func team() *cast {
	return &cast{
		bots: []gossip.Bot{
			{ID: "elena", Name: "Elena"}, {ID: "finn", Name: "Finn Shipley"}, {ID: "priest", Name: "Priest"},
			{ID: "zed", Name: "Zed"}, {ID: "kiosk", Name: "Kiosk", Public: true},
		},
		people: map[string]gossip.Person{"bryan": {Name: "Bryan", Share: true}},
	}
}

// world is a grapevine on a real store, with what it logged.
type world struct {
	t     *testing.T
	path  string
	store *sqlite.Store
	g     *gossip.Grapevine
	cast  *cast
	logs  *syncBuffer
	msgs  atomic.Int64
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newWorld(t *testing.T, opts gossip.Options) *world {
	t.Helper()
	w := &world{t: t, path: filepath.Join(t.TempDir(), "sb.db"), cast: team(), logs: &syncBuffer{}}
	w.open(opts)
	return w
}

// open opens the store and starts a grapevine on it.
func (w *world) open(opts gossip.Options) {
	w.t.Helper()
	s, err := sqlite.Open(context.Background(), w.path)
	if err != nil {
		w.t.Fatal(err)
	}
	w.store = s
	opts.Logger = slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.Poll == 0 {
		opts.Poll = 20 * time.Millisecond
	}
	w.g = gossip.New(s, opts)
	w.g.Start(w.cast)
	w.t.Cleanup(w.close)
}

// close stops the grapevine and closes the store.
func (w *world) close() {
	if w.g != nil {
		w.g.Close(context.Background())
		w.g = nil
	}
	if w.store != nil {
		w.store.Close()
		w.store = nil
	}
}

// say stores bryan's private message to bot, as the gateway does, and
// returns its ID.
func (w *world) say(user, bot, text string) int64 {
	w.t.Helper()
	res, err := w.store.AppendInbound(context.Background(), gateway.Inbound{
		Message: chat.Message{Platform: "web", ChatID: "web-" + user + ":" + bot, ChatType: chat.Private,
			PlatformMsgID: fmt.Sprint("m", w.msgs.Add(1)), Kind: chat.KindChat,
			From: chat.Party{Kind: chat.Human, ID: "web-" + user, Name: user}, UserID: user, Bot: bot, Text: text, Time: time.Now()},
		Turns: []sessions.Request{{Session: sessions.Key{Bot: bot, Scope: sessions.ScopeUser, ScopeID: user}, Text: text}},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return res.Message.ID
}

// classifier makes a bot judge, of brain b, the grapevine's classifier.
func (w *world) classifier(b brains.Brain) {
	w.cast.mu.Lock()
	w.cast.bots = append(w.cast.bots, gossip.Bot{ID: "judge", Name: "Judge", Brain: b})
	w.cast.mu.Unlock()
	s := w.g.Settings()
	s.Classifier = "judge"
	w.g.Configure(s)
}

// tell stores bryan's message to bot and hands it to the grapevine.
func (w *world) tell(bot, text string) int64 {
	w.t.Helper()
	id := w.say("bryan", bot, text)
	w.g.Heard(gossip.Heard{MessageID: id, Key: fmt.Sprint("web/", id), User: "bryan", UserName: "Bryan", Bot: bot, Platform: "web", Text: text})
	return id
}

// event waits for the event of message id to exist and settle.
func (w *world) event(id int64) gossip.Event {
	w.t.Helper()
	return w.await(id, func(e gossip.Event) bool { return e.Status != gossip.StatusQueued })
}

// await waits for the event of message id to exist and satisfy ok.
func (w *world) await(id int64, ok func(gossip.Event) bool) gossip.Event {
	w.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		es, err := w.store.GossipEvents(context.Background(), gossip.Query{Limit: 100})
		if err != nil {
			w.t.Fatal(err)
		}
		for _, e := range es {
			if e.MessageID == id && ok(e) {
				return e
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.t.Fatalf("no such event for message %d; logs:\n%s", id, w.logs)
	return gossip.Event{}
}

// noEvent checks, once the grapevine has checked everything told so
// far, that message id made no event.
func (w *world) noEvent(id int64) {
	w.t.Helper()
	// A marker told after it is checked after it.
	marker := w.tell("elena", "marker: I got a new job")
	w.event(marker)
	es, _ := w.store.GossipEvents(context.Background(), gossip.Query{Limit: 100})
	for _, e := range es {
		if e.MessageID == id {
			w.t.Errorf("message %d made event %+v", id, e)
		}
	}
}

// notes lists the memories in bot's session with bryan.
func (w *world) notes(bot string) []string {
	w.t.Helper()
	sess, ok, err := w.store.FindSession(context.Background(), sessions.Key{Bot: bot, Scope: sessions.ScopeUser, ScopeID: "bryan"})
	if err != nil {
		w.t.Fatal(err)
	}
	var out []string
	if !ok {
		return out
	}
	msgs, err := w.store.SessionMessages(context.Background(), sess.ID, chat.KindSystem, 100)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

// knownBy makes bryan have sent n messages to each bot.
func (w *world) knownBy(n int, bots ...string) {
	for _, b := range bots {
		for i := range n {
			w.say("bryan", b, fmt.Sprint("hello ", i))
		}
	}
}

func TestAllowedReachesThoseWhoKnowThePerson(t *testing.T) {
	w := newWorld(t, gossip.Options{})
	w.knownBy(3, "finn", "kiosk", "elena")
	w.knownBy(2, "priest")
	w.say("tess", "zed", "hi") // someone else's messages count for nobody
	w.knownBy(1, "zed")
	e := w.event(w.tell("elena", "Guess what? I got a new job at a tech company"))
	if e.Status != gossip.StatusDelivered || !slices.Equal(e.Recipients, []string{"finn"}) || e.Reason != "" ||
		e.Topic != "career" || e.Summary != "I got a new job at a tech company" || e.Depth != 0 || e.SourceBot != "elena" {
		t.Errorf("event = %+v; want career, delivered to finn alone", e)
	}
	want := "[Gossip from Elena] Bryan: I got a new job at a tech company"
	if got := w.notes("finn"); !slices.Equal(got, []string{want}) {
		t.Errorf("finn's session holds %q, want %q", got, want)
	}
	for _, b := range []string{"elena", "priest", "zed", "kiosk"} {
		if got := w.notes(b); len(got) != 0 {
			t.Errorf("%s heard %q", b, got)
		}
	}
	ms, err := w.g.Memories(context.Background(), "finn", "bryan")
	if err != nil || len(ms) != 1 || ms[0].From != "elena" || ms[0].Text != "Bryan: I got a new job at a tech company" {
		t.Errorf("finn's memories = %+v, %v", ms, err)
	}

	// min_messages is live: at 2, priest hears the next news too.
	s := w.g.Settings()
	s.MinMessages = 2
	w.g.Configure(s)
	e = w.event(w.tell("elena", "We are moving to Lisbon in May."))
	if !slices.Equal(e.Recipients, []string{"finn", "priest"}) {
		t.Errorf("at min_messages 2 the event reached %v, want finn and priest", e.Recipients)
	}

	// Nobody knows him well enough: delivered to nobody, and said why.
	s.MinMessages = 50
	w.g.Configure(s)
	e = w.event(w.tell("elena", "I graduated!"))
	if e.Status != gossip.StatusDelivered || len(e.Recipients) != 0 || !strings.Contains(e.Reason, "no other bot has 50 messages from Bryan") {
		t.Errorf("an event nobody is due = %+v", e)
	}
}

func TestBlockingRules(t *testing.T) {
	w := newWorld(t, gossip.Options{})
	w.knownBy(3, "elena", "finn", "priest", "kiosk")
	health := w.g.Settings()
	health.Patterns = append([]gossip.Pattern{{Match: regexp.MustCompile(`(?i)\bsurgery\b`), Topic: "health"}}, health.Patterns...)
	w.g.Configure(health)
	for _, tc := range []struct {
		name   string
		bot    string
		text   string
		person gossip.Person
		reason string
		depth  int
	}{
		{"sensitive word", "elena", "I got a new job and my salary doubled!", gossip.Person{Name: "Bryan", Share: true}, `sensitive topic "salary"`, 0},
		{"sensitive topic", "elena", "My surgery went well.", gossip.Person{Name: "Bryan", Share: true}, `sensitive topic "health"`, 0},
		{"opted out", "elena", "I got a new job at a tech company", gossip.Person{Name: "Bryan", Share: false}, "share_with_other_bots: false", 0},
		{"invisible", "elena", "I got a new job at a tech company", gossip.Person{Name: "Bryan", Share: true, Invisible: true}, "invisible: true", 0},
		{"depth 1", "elena", "Finn told me: [Gossip from Finn Shipley] Bryan: I got a new job", gossip.Person{Name: "Bryan", Share: true}, "gossip about gossip never travels (depth 1)", 1},
		{"public source", "kiosk", "I got a new job at a tech company", gossip.Person{Name: "Bryan", Share: true}, "public bot kiosk", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.cast.setPerson("bryan", tc.person)
			e := w.event(w.tell(tc.bot, tc.text))
			if e.Status != gossip.StatusBlocked || !strings.Contains(e.Reason, tc.reason) || e.Depth != tc.depth ||
				len(e.Recipients) != 0 || len(e.Pending) != 0 {
				t.Errorf("event = %+v; want blocked for %q at depth %d, to nobody", e, tc.reason, tc.depth)
			}
			for _, b := range []string{"elena", "finn", "priest", "zed", "kiosk"} {
				if got := w.notes(b); len(got) != 0 {
					t.Errorf("%s heard %q", b, got)
				}
			}
		})
	}
}

// Gossip about gossip never travels: a memory is never checked (only
// people's chat messages are), and a message that repeats one is depth
// 1 and blocked; no event is ever deeper.
func TestDepthNeverExceedsOne(t *testing.T) {
	w := newWorld(t, gossip.Options{})
	w.knownBy(3, "elena", "finn", "priest")
	e := w.event(w.tell("elena", "I got promoted!"))
	if len(e.Recipients) != 2 {
		t.Fatalf("first event = %+v", e)
	}
	note := w.notes("finn")[0]
	// Bryan pastes what finn was told, to priest.
	again := w.event(w.tell("priest", note))
	if again.Depth != 1 || again.Status != gossip.StatusBlocked {
		t.Errorf("a message repeating a memory = %+v; want depth 1, blocked", again)
	}
	es, _ := w.store.GossipEvents(context.Background(), gossip.Query{Limit: 100})
	for _, e := range es {
		if e.Depth > 1 {
			t.Errorf("event %d has depth %d", e.ID, e.Depth)
		}
	}
	if got := w.notes("elena"); len(got) != 0 {
		t.Errorf("elena heard of her own news through priest: %q", got)
	}
}

func TestNoNewsNoEvent(t *testing.T) {
	w := newWorld(t, gossip.Options{})
	w.noEvent(w.tell("elena", "what's the weather like?"))
	s := w.g.Settings()
	s.Enabled = false
	w.g.Configure(s)
	off := w.tell("elena", "I got a new job at a tech company")
	s.Enabled = true
	w.g.Configure(s)
	w.noEvent(off)
}

// brainFunc is a brain answering with fn.
type brainFunc func(brains.Turn) (string, error)

func (f brainFunc) Reply(_ context.Context, t brains.Turn) (brains.Reply, error) {
	text, err := f(t)
	return brains.Reply{Text: text}, err
}

func TestClassifier(t *testing.T) {
	var asked []string
	var mu sync.Mutex
	classifier := brainFunc(func(t brains.Turn) (string, error) {
		mu.Lock()
		asked = append(asked, t.Text)
		mu.Unlock()
		if t.SessionID == "" || len(t.History) != 0 || t.Actions != nil || len(t.Context) != 1 ||
			!strings.Contains(t.Context[0].Body, `{"topic"`) || !strings.Contains(t.Context[0].Body, "Elena") {
			return "", fmt.Errorf("unexpected classifier turn %+v", t)
		}
		switch {
		case strings.Contains(t.Text, "puppy"):
			return `{"topic": "pets", "summary": "We adopted a puppy"}`, nil
		case strings.Contains(t.Text, "garbage"):
			return "Well, that is lovely news, I think! Topic: life.", nil
		case strings.Contains(t.Text, "broken"):
			return "", errors.New("model server down")
		}
		return "none", nil
	})
	w := newWorld(t, gossip.Options{})
	w.knownBy(3, "finn")
	w.classifier(classifier)

	puppy := "We adopted a puppy yesterday, her name is Miso."
	first := w.tell("elena", puppy)
	e := w.event(first)
	if e.Topic != "pets" || e.Summary != "We adopted a puppy" || !slices.Equal(e.Recipients, []string{"finn"}) {
		t.Errorf("a classified event = %+v", e)
	}
	// Another copy of the same message, to another bot it addresses, is
	// not classified again.
	mu.Lock()
	classified := len(asked)
	mu.Unlock()
	second := w.say("bryan", "finn", puppy)
	w.g.Heard(gossip.Heard{MessageID: second, Key: fmt.Sprint("web/", first), User: "bryan", UserName: "Bryan", Bot: "finn", Platform: "web", Text: puppy})
	w.noEvent(second)
	mu.Lock()
	if len(asked) != classified {
		t.Errorf("the classifier was asked of a copy: %q", asked[classified:])
	}
	mu.Unlock()
	w.noEvent(w.tell("elena", "this is garbage to the classifier"))
	if !strings.Contains(w.logs.String(), "the classifier's answer is garbage; taken as none") {
		t.Errorf("garbage was not logged:\n%s", w.logs)
	}
	if strings.Contains(w.logs.String(), "Topic: life") {
		t.Errorf("the classifier's answer was logged:\n%s", w.logs)
	}
	w.noEvent(w.tell("elena", "the classifier is broken"))
	if !strings.Contains(w.logs.String(), "the classifier failed; taken as none") {
		t.Errorf("a failing classifier was not logged")
	}
	w.noEvent(w.tell("elena", "just saying hello"))
	// A pattern's match does not ask it; nor does a person who does not
	// share, whatever they say.
	mu.Lock()
	before := len(asked)
	mu.Unlock()
	w.event(w.tell("elena", "I got a new job"))
	w.cast.setPerson("bryan", gossip.Person{Name: "Bryan", Share: false})
	w.noEvent(w.tell("elena", "We adopted another puppy"))
	mu.Lock()
	defer mu.Unlock()
	// The markers noEvent tells match a pattern.
	if len(asked) != before {
		t.Errorf("the classifier was asked %q", asked[before:])
	}
}

// Heard never waits for a check (SPEC §10.5: detection never delays the
// reply): while the classifier thinks, the queue takes what fits and
// the rest go unchecked, with a warning; the check resumes when the
// classifier answers.
func TestHeardNeverWaits(t *testing.T) {
	release, asked := make(chan struct{}), make(chan struct{}, 1)
	classifier := brainFunc(func(brains.Turn) (string, error) {
		select {
		case asked <- struct{}{}:
		default:
		}
		<-release
		return `{"topic": "pets", "summary": "We adopted a puppy"}`, nil
	})
	w := newWorld(t, gossip.Options{QueueSize: 2})
	w.knownBy(3, "finn")
	w.classifier(classifier)

	first := w.tell("elena", "We adopted a puppy")
	<-asked // the checker is held by the classifier
	heard := make(chan struct{})
	go func() {
		defer close(heard)
		for i := range 10 {
			w.tell("elena", fmt.Sprintf("Another puppy, number %d", i))
		}
	}()
	select {
	case <-heard:
	case <-time.After(10 * time.Second):
		t.Fatal("Heard waited for the classifier")
	}
	if !strings.Contains(w.logs.String(), "the queue of messages to check is full") {
		t.Errorf("a full queue was not logged:\n%s", w.logs)
	}
	close(release)
	if e := w.event(first); e.Topic != "pets" {
		t.Errorf("the held message's event = %+v", e)
	}
}

// A restart mid-delivery: the first gateway delivers one memory of three
// and stops; the next start delivers the other two, and each bot holds
// its memory once.
func TestRestartMidDelivery(t *testing.T) {
	var allowed atomic.Int64
	allowed.Store(1)
	stopped := make(chan struct{}, 10)
	w := newWorld(t, gossip.Options{BeforeDeliver: func(ctx context.Context, d gossip.Delivery) error {
		if allowed.Add(-1) >= 0 {
			return nil
		}
		select {
		case stopped <- struct{}{}:
		default:
		}
		return errors.New("the gateway is going down")
	}})
	w.knownBy(3, "elena", "finn", "priest", "zed")
	id := w.tell("elena", "I got a new job at a tech company")
	<-stopped
	w.close()

	// What the crash left: one delivered, two pending.
	w.open(gossip.Options{BeforeDeliver: func(context.Context, gossip.Delivery) error { return errors.New("not yet") }})
	es, err := w.store.GossipEvents(context.Background(), gossip.Query{Limit: 10})
	if err != nil || len(es) != 1 || es[0].MessageID != id || len(es[0].Recipients) != 1 || len(es[0].Pending) != 2 {
		t.Fatalf("after the crash: %+v, %v; want one delivered and two pending", es, err)
	}
	w.close()

	w.open(gossip.Options{})
	e := w.event(id)
	if e.Status != gossip.StatusDelivered || len(e.Recipients) != 3 {
		t.Fatalf("after the restart: %+v", e)
	}
	for _, b := range []string{"finn", "priest", "zed"} {
		if got := w.notes(b); len(got) != 1 {
			t.Errorf("%s holds %d memories: %q", b, len(got), got)
		}
	}
}

// Two gateways on one database deliver each memory once.
func TestTwoDeliverers(t *testing.T) {
	w := newWorld(t, gossip.Options{})
	second := gossip.New(w.store, gossip.Options{Poll: 5 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(w.logs, nil))})
	second.Start(w.cast)
	defer second.Close(context.Background())
	w.knownBy(3, "elena", "finn", "priest", "zed")
	var ids []int64
	for i := range 5 {
		ids = append(ids, w.tell("elena", fmt.Sprintf("I got a new job, number %d.", i)))
		second.Wake()
	}
	for _, id := range ids {
		if e := w.event(id); len(e.Recipients) != 3 {
			t.Errorf("event of message %d reached %v", id, e.Recipients)
		}
	}
	for _, b := range []string{"finn", "priest", "zed"} {
		if got := w.notes(b); len(got) != len(ids) {
			t.Errorf("%s holds %d memories, want %d: %q", b, len(got), len(ids), got)
		}
	}
}

// A person who opts out after the news is told: what is still queued is
// blocked, and prompts show none of it.
func TestOptOutBeforeDelivery(t *testing.T) {
	hold := make(chan struct{})
	w := newWorld(t, gossip.Options{BeforeDeliver: func(ctx context.Context, d gossip.Delivery) error {
		select {
		case <-hold:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	w.knownBy(3, "elena", "finn")
	id := w.tell("elena", "I got promoted")
	w.await(id, func(e gossip.Event) bool { return e.Status == gossip.StatusQueued }) // held
	w.cast.setPerson("bryan", gossip.Person{Name: "Bryan", Share: false})
	close(hold)
	e := w.event(id)
	if e.Status != gossip.StatusBlocked || !strings.Contains(e.Reason, "before delivery") || len(e.Recipients) != 0 {
		t.Errorf("event = %+v; want it blocked before delivery", e)
	}
	if ms, err := w.g.Memories(context.Background(), "finn", "bryan"); err != nil || len(ms) != 0 {
		t.Errorf("memories of a person who does not share = %+v, %v", ms, err)
	}
	if got := w.notes("finn"); len(got) != 0 {
		t.Errorf("finn heard %q", got)
	}
}

// On Telegram and Discord each bot of a group receives its own copy of a
// message: two bots addressed at once hear the same news, which makes
// one event.
func TestCopiesOfOneMessageMakeOneEvent(t *testing.T) {
	w := newWorld(t, gossip.Options{})
	w.knownBy(3, "finn", "priest", "zed")
	text := "@elena @finn I got a new job!"
	first, second := w.say("bryan", "elena", text), w.say("bryan", "finn", text)
	for _, h := range []gossip.Heard{
		{MessageID: first, Key: "telegram/-100/77", User: "bryan", UserName: "Bryan", Bot: "elena", Platform: "telegram", Text: text},
		{MessageID: second, Key: "telegram/-100/77", User: "bryan", UserName: "Bryan", Bot: "finn", Platform: "telegram", Text: text},
	} {
		w.g.Heard(h)
	}
	e := w.event(first)
	w.noEvent(second)
	if e.SourceBot != "elena" || !slices.Equal(e.Recipients, []string{"finn", "priest", "zed"}) {
		t.Errorf("event = %+v", e)
	}
	news := 0
	for _, n := range w.notes("priest") {
		if strings.Contains(n, "@elena @finn") {
			news++
		}
	}
	if news != 1 {
		t.Errorf("priest heard the news %d times: %q", news, w.notes("priest"))
	}
}
