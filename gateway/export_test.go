package gateway

// FocusCommand is a parsed focus command, for tests.
type FocusCommand struct {
	Unfocus bool
	Name    string
}

// ParseFocusForTest exposes parseFocus to the package's external tests.
func ParseFocusForTest(text string) (FocusCommand, bool) {
	c, ok := parseFocus(text)
	return FocusCommand{Unfocus: c.unfocus, Name: c.name}, ok
}
