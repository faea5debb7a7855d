package prompt

// messageOverhead is the estimated cost in tokens of a message's framing
// (role, separators) in chat templates, on top of its content.
const messageOverhead = 4

// EstimateTokens estimates the tokens s takes: about four bytes a token,
// rounded up. Counting bytes rather than runes errs on the safe side for
// scripts that take more than one byte a character.
func EstimateTokens(s string) int {
	return (len(s) + 3) / 4
}

// messageTokens is a message's estimated cost.
func messageTokens(m Message) int {
	return messageOverhead + EstimateTokens(m.Content)
}

// window keeps the last n messages; n <= 0 keeps them all.
func window(ms []Message, n int) []Message {
	if n > 0 && len(ms) > n {
		return ms[len(ms)-n:]
	}
	return ms
}

// fit drops the oldest messages until the rest take at most budget
// tokens. A budget below zero keeps nothing.
func fit(ms []Message, budget int) []Message {
	total := 0
	// Walk from the newest, so the kept messages are the most recent run
	// that fits; one long old message does not let older short ones in.
	for i := len(ms) - 1; i >= 0; i-- {
		total += messageTokens(ms[i])
		if total > budget {
			return ms[i+1:]
		}
	}
	return ms
}
