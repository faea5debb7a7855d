package world

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by an *InvalidError: what a bot or a request
// adds to a space breaks a rule (an empty or too long text, an unknown
// severity, a confidence outside 0–1, attributes that are not a JSON
// object); asking again will not help.
var ErrInvalid = errors.New("invalid")

// InvalidError is an addition that breaks a rule, naming the field at
// fault: for an action, its argument ("text", "confidence", …), which is
// how the action registry reports it. It wraps ErrInvalid.
type InvalidError struct {
	Field   string
	Problem string
}

// Error returns "FIELD: PROBLEM".
func (e *InvalidError) Error() string { return e.Field + ": " + e.Problem }

// Unwrap returns ErrInvalid.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Invalid makes an *InvalidError of field, its problem formatted as by
// fmt.Sprintf.
func Invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Problem: fmt.Sprintf(format, args...)}
}
