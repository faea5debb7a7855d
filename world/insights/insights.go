// Package insights is stigmergy (SPEC §10.4, seed 000): what a bot
// notices about a person, left where the other bots find it. A bot
// stores an insight with the remember action; on every turn of another
// bot for the same person, the insights that share a word with the new
// message (stop words aside), above a confidence threshold, are found by
// full-text search, the most relevant first, and shown to that bot: to
// model brains as the [INSIGHTS FROM OTHER CHARACTERS] block, to script
// templates as .Insights.
//
// A bot never finds its own insights, and never another person's. A
// person whose privacy settings keep them out of the shared world
// (share_with_other_bots: false, invisible: true) has their insights
// stored but never shared; the gateway, which knows the settings, asks
// for none. Public bots take no part.
//
// The Pool checks what it is given and decides what a turn finds: the
// settings (shared.insights: enabled, confidence_threshold, limit) and
// the words to search for (Words). The store keeps the rows and their
// full-text index and ranks the matches: SQLite's FTS5 with bm25,
// PostgreSQL's tsvector with ts_rank, both with PostgreSQL's english
// stop words.
package insights

import (
	"context"
	"errors"
	"time"
)

// The kinds of insight (SPEC §10.1).
const (
	// Epiphany is a significant realisation about the person.
	Epiphany = "epiphany"
	// Diary is the bot's reflective journal entry about them.
	Diary = "diary"
	// Dream is dream content.
	Dream = "dream"
	// Observation is something noticed in passing.
	Observation = "observation"
)

// Kinds lists the kinds of insight.
var Kinds = []string{Epiphany, Diary, Dream, Observation}

// MaxText is the longest insight, in characters: one or two sentences
// are what other bots' prompts have room for.
const MaxText = 1000

// Defaults of shared.insights.
const (
	DefaultThreshold = 0.7
	DefaultLimit     = 3
)

// Insight is one stored insight about a person.
type Insight struct {
	// ID is given by the store; a later insight has a greater ID.
	ID int64
	// User is the person it is about: a master user ID, or the platform
	// ID of a person users.yaml does not list.
	User string
	// Bot is the ID of the bot that wrote it.
	Bot        string
	Kind       string
	Text       string
	Confidence float64
	CreatedAt  time.Time
}

// Query selects insights to list.
type Query struct {
	// Users keeps the insights about any of these IDs (a person's master
	// ID and platform IDs); none keeps everyone's.
	Users []string
	// Bot keeps one author's insights.
	Bot string
	// Limit keeps the newest Limit (at least 1).
	Limit int
}

// Search asks a store for the insights a turn finds.
type Search struct {
	// User is the person whose insights are searched, and only theirs.
	User string
	// Viewer is the bot whose turn it is: its own insights are left out.
	Viewer string
	// Words are the message's words as Words makes them: lower-case,
	// letters and digits only, stop words left out, each once. An
	// insight matches when its text holds at least one of them, each
	// side stemmed as its full-text index stems (PostgreSQL's english
	// configuration; SQLite's porter tokenizer).
	Words []string
	// MinConfidence keeps insights of at least this confidence.
	MinConfidence float64
	// Limit keeps the Limit most relevant (at least 1).
	Limit int
}

// Store keeps insights and their full-text index. Its writes are each
// one transaction.
type Store interface {
	// AddInsight stores in, which has no ID yet, and returns it as
	// stored.
	AddInsight(ctx context.Context, in Insight) (Insight, error)
	// Insights lists the newest q.Limit insights q selects, oldest
	// first.
	Insights(ctx context.Context, q Query) ([]Insight, error)
	// SearchInsights returns the insights s finds, the most relevant
	// first (bm25 on SQLite, ts_rank on PostgreSQL; the newer first
	// when they rank the same). No words find nothing.
	SearchInsights(ctx context.Context, s Search) ([]Insight, error)
	// DeleteInsight forgets one insight; an unknown ID is an error
	// wrapping ErrNotFound.
	DeleteInsight(ctx context.Context, id int64) error
}

// ErrNotFound: no insight has that ID. An insight that breaks a rule (an
// empty or too long text, an unknown kind, a confidence outside 0–1) is
// a *world.InvalidError naming its field: "kind", "text", "confidence",
// "user" or "bot".
var ErrNotFound = errors.New("no such insight")
