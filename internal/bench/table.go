package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// row is one line of the report: a figure, the baseline it is judged
// against (measured in the same run), and the target.
type row struct {
	name     string
	value    string
	baseline string
	target   string
	// verdict is PASS, MISS, ERR or "—" when the figure has no target.
	verdict string
}

// verdict turns a comparison into PASS or MISS; a figure whose
// measurement failed is ERR whatever the comparison says.
func verdict(ok bool, failed bool) string {
	switch {
	case failed:
		return "ERR"
	case ok:
		return "PASS"
	}
	return "MISS"
}

// printTable writes the rows as an aligned table followed by the notes.
func printTable(w io.Writer, header []string, rows []row, notes []string) {
	for _, h := range header {
		fmt.Fprintln(w, h)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\tbaseline (same run)\ttarget\tresult")
	fmt.Fprintln(tw, "------\t-----\t-------------------\t------\t------")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.name, r.value, r.baseline, r.target, r.verdict)
	}
	tw.Flush()
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, "  "+n)
		}
	}
}

// quantile returns the q-quantile (0..1) of d by the nearest-rank
// method; d is sorted in place. Zero when d is empty.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	if !slices.IsSorted(d) {
		slices.Sort(d)
	}
	i := int(q*float64(len(d))+0.999999) - 1
	return d[max(0, min(i, len(d)-1))]
}

// ms formats a duration in milliseconds with two decimals.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// rate formats events per second with thousands separators.
func rate(perSecond float64) string {
	return thousands(int64(perSecond+0.5)) + "/s"
}

// share formats part as a percentage of whole, to one decimal, so that a
// share just under a target does not print as the target.
func share(part, whole float64) string {
	if whole <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*part/whole)
}

// thousands formats n as 12,345.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// kib formats bytes in KiB with one decimal.
func kib(bytes float64) string {
	return fmt.Sprintf("%.1f KiB", bytes/1024)
}
