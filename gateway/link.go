package gateway

// The states of one bot's connection to a platform, as a platform reports
// them through a LinkReport. A bot whose platform section is left out, or
// whose token is unset, never connects: the wiring that configures the
// platform marks it skipped (LinkSkipped) itself.
const (
	// LinkConnecting: the connection is being made (at start, after a
	// settings change, or while resuming a dropped connection).
	LinkConnecting = "connecting"
	// LinkConnected: the platform accepted the bot and messages flow.
	LinkConnected = "connected"
	// LinkFailing: the last attempt failed; the error says why. The
	// platform goes on retrying unless the error cannot be fixed by
	// retrying (a refused token), which the error then says.
	LinkFailing = "failing"
	// LinkSkipped: the bot is not connected to the platform on purpose
	// (its token variable is unset, say). Platforms never report it.
	LinkSkipped = "skipped"
)

// LinkReport receives the state of one bot's connection to a platform
// each time it changes; err is why, for LinkFailing, and nil otherwise.
// Platforms call it from their own goroutines, possibly while holding
// their own locks: it must return quickly and must not call back into the
// platform. A nil LinkReport is not called.
type LinkReport func(bot, state string, err error)
