package delegation

import "strings"

// closest returns the ID of the bot whose name is within two edits of
// name, preferring the smallest distance; "" when none is close enough.
// Very short names are never "close": "tell me to" must not suggest Mia.
func (p *Parser) closest(name string) string {
	name = strings.ToLower(name)
	if len([]rune(name)) < 3 {
		return ""
	}
	best, bestD := "", 3
	for n, id := range p.byName {
		d := editDistance(name, n)
		// A distance must be small relative to the name, or "ask them to"
		// would suggest a bot called "theo".
		if d <= 2 && d*2 < len([]rune(n)) && (d < bestD || d == bestD && id < best) {
			best, bestD = id, d
		}
	}
	return best
}

// Closest returns the ID of the parser's bot whose name is within two
// edits of name ("" when none is close enough): the "did you mean" of a
// name that addresses no bot.
func (p *Parser) Closest(name string) string { return p.closest(name) }

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// NameOf returns the display name of bot id among the parser's bots.
func (p *Parser) NameOf(id string) string {
	for _, b := range p.bots {
		if b.ID == id {
			if b.Name != "" {
				return b.Name
			}
			return b.ID
		}
	}
	return id
}
