package gateway

import (
	"context"
	"time"

	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/world/chains"
)

// ChainStore keeps the bot-to-bot chains of group chats (SPEC §10.6):
// one chains.State a chat, and the turns that are chain steps. It is
// part of Store.
type ChainStore interface {
	// ChainState returns the chain of a group chat as a bot message of
	// it, msgID, is judged: the chat's State (Version 0 when none is
	// stored; Platform and Chat are filled in then too) and the ID of
	// the newest person's message of the chat after the State's Mark and
	// before msgID (0: none). Where each bot gets its own copy of a
	// message (Telegram, Discord), the copies are one message: a copy
	// stored after the Mark of a message (same author, time and text)
	// whose first copy was stored shortly before it does not count.
	ChainState(ctx context.Context, platform, chatID string, msgID int64) (st chains.State, personBefore int64, err error)
	// AdvanceChain stores the State a judged message leads to and queues
	// the turns of the bots that answer it, in one transaction, provided
	// the stored State still has a.State.Version (0: none stored). ok is
	// false, and nothing is stored, when another writer changed it
	// first. The turns are on a.Message, in a.Answers' order, each after
	// the one before; it returns them.
	AdvanceChain(ctx context.Context, a ChainAdvance) (turns []sessions.TurnRef, ok bool, err error)
	// ChainTurn reports the chain step turn answers; ok is false when the
	// turn is none.
	ChainTurn(ctx context.Context, turn int64) (step ChainStep, ok bool, err error)
	// Chains lists the States of the chats where a chain started, most
	// recently written first, at most limit, with their chats' names.
	Chains(ctx context.Context, limit int) ([]ChainInfo, error)
}

// ChainInfo is a chat's chain as the operator sees it.
type ChainInfo struct {
	chains.State
	// ChatName is the group's name where the platform gave one.
	ChatName string
}

// ChainAdvance is a judged bot message to store: the chat's new State and
// the answers it asks for.
type ChainAdvance struct {
	// State is the State after the message; its Version is the one the
	// judgement read.
	State chains.State
	// Message is the judged message's ID.
	Message int64
	// Answers are the bots that answer it, in order.
	Answers []ChainAnswer
	// At is when the judgement was made.
	At time.Time
}

// ChainAnswer is one bot's answer to a bot message: a chain step.
type ChainAnswer struct {
	// Session is the answering bot's session.
	Session sessions.Key
	// Text is what its brain sees: the message with the address to the
	// bot stripped.
	Text string
	// Step is the chain's length with this answer; Closing marks the
	// step that reaches max_chain.
	Step    int
	Closing bool
}

// ChainStep is what a chain step's turn knows of its chain.
type ChainStep struct {
	Step    int
	Closing bool
	// Person is the display name on the person's message the chain
	// started from (found by following the replies back), "" when
	// unknown.
	Person string
}
