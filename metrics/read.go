// Package metrics reads the Prometheus text format that a gateway's
// /metrics serves, for internal/bench, which compares runs by the store
// writer's counters. The gateway itself serves its metrics with
// client_golang (cmd/switchboard/metrics.go); this package has no
// dependencies and writes nothing.
package metrics

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ReadText reads metrics in the Prometheus text format into their values
// by series: the metric's name with its labels as written, such as
// `switchboard_turns_total{path="instant"}`. Comments and blank lines are
// skipped; a sample line without a value that parses as a number is an
// error.
func ReadText(r io.Reader) (map[string]float64, error) {
	vals := make(map[string]float64)
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// The value is the last field: a label value may hold spaces.
		i := strings.LastIndexByte(line, ' ')
		if i <= 0 {
			return nil, fmt.Errorf("metrics: line %d: no value in %q", n, line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: line %d: %w", n, err)
		}
		vals[strings.TrimSpace(line[:i])] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return vals, nil
}
