package config

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"time"
)

// Durations in the files are Go durations ("90s", "1h30m") that may
// start with a number of days: "30d", "1d12h". A day is 24 hours.

// daysRE splits a duration into its sign, its days and the rest.
var daysRE = regexp.MustCompile(`^([+-]?)([0-9]+)d(.*)$`)

// maxDays is the most days a time.Duration holds.
const maxDays = math.MaxInt64 / int64(24*time.Hour)

// ParseDuration parses a duration of the configuration files: what
// time.ParseDuration accepts, optionally starting with whole days ("30d",
// "1d12h", "-2d").
func ParseDuration(s string) (time.Duration, error) {
	m := daysRE.FindStringSubmatch(s)
	if m == nil {
		return time.ParseDuration(s)
	}
	days, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil || days > maxDays {
		return 0, fmt.Errorf("duration %q is too long", s)
	}
	d := time.Duration(days) * 24 * time.Hour
	if rest := m[3]; rest != "" {
		if rest[0] == '+' || rest[0] == '-' {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		r, err := time.ParseDuration(rest)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		if d+r < d {
			return 0, fmt.Errorf("duration %q is too long", s)
		}
		d += r
	}
	if m[1] == "-" {
		d = -d
	}
	return d, nil
}

// durationHook decodes a string into a time.Duration with ParseDuration.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != durationType || from.Kind() != reflect.String {
		return data, nil
	}
	return ParseDuration(data.(string))
}

// argTextType is the type of an action argument's text.
var argTextType = reflect.TypeOf(ArgText(""))

// argTextHook decodes a YAML value into an ArgText: a number or a
// boolean as its text, as written; a list as JSON text (inputs:
// [competitors.json] is ["competitors.json"]), which the action parses
// as its schema asks. The shape check refuses mappings before this.
func argTextHook(from, to reflect.Type, data any) (any, error) {
	if to != argTextType {
		return data, nil
	}
	switch v := data.(type) {
	case []any:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("an action argument that is a list or mapping must be JSON-like: %v", err)
		}
		return ArgText(b), nil
	case float64:
		return ArgText(strconv.FormatFloat(v, 'g', -1, 64)), nil
	case float32:
		return ArgText(strconv.FormatFloat(float64(v), 'g', -1, 32)), nil
	case int, int64, uint64, bool:
		return ArgText(fmt.Sprint(v)), nil
	}
	return data, nil
}
