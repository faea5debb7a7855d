package metrics

import (
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	r := New()
	c := r.NewCounter("events_total", "Events.", "platform")
	c.Inc("web")
	c.Add(2, "telegram")
	c.Inc("we\"b")
	r.NewGaugeFunc("depth", "Depth.", func() float64 { return 3 })
	h := r.NewHistogram("brain_seconds", "Brain time.", []float64{0.1, 1}, "bot", "kind")
	h.Observe(0.05, "matty", "script")
	h.Observe(0.5, "matty", "script")
	var sb strings.Builder
	r.WriteText(&sb)
	got := sb.String()
	for _, want := range []string{
		"# TYPE events_total counter",
		`events_total{platform="telegram"} 2`,
		`events_total{platform="web"} 1`,
		`events_total{platform="we\"b"} 1`,
		"# TYPE depth gauge\ndepth 3",
		`brain_seconds_bucket{bot="matty",kind="script",le="0.1"} 1`,
		`brain_seconds_bucket{bot="matty",kind="script",le="1"} 2`,
		`brain_seconds_bucket{bot="matty",kind="script",le="+Inf"} 2`,
		`brain_seconds_sum{bot="matty",kind="script"} 0.55`,
		`brain_seconds_count{bot="matty",kind="script"} 2`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}
