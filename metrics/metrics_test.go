package metrics

import (
	"maps"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	r := New()
	c := r.NewCounter("events_total", "Events.", "platform")
	c.Inc("web")
	c.Add(2, "telegram")
	c.Inc("we\"b")
	c.Inc("web") // a second count of a series goes through its cached key
	c.Inc("we\"b")
	r.NewGaugeFunc("depth", "Depth.", func() float64 { return 3 })
	r.NewCounterFunc("kept_total", "Kept elsewhere.", func() float64 { return 1.5 })
	h := r.NewHistogram("brain_seconds", "Brain time.", []float64{0.1, 1}, "bot", "kind")
	h.Observe(0.05, "matty", "script")
	h.Observe(0.5, "matty", "script")
	h.Observe(0.5, "finn", "exec") // another series: "matty" "script" is cached, not this
	var sb strings.Builder
	r.WriteText(&sb)
	got := sb.String()
	for _, want := range []string{
		"# TYPE events_total counter",
		`events_total{platform="telegram"} 2`,
		`events_total{platform="web"} 2`,
		`events_total{platform="we\"b"} 2`,
		"# TYPE depth gauge\ndepth 3",
		"# TYPE kept_total counter\nkept_total 1.5",
		`brain_seconds_bucket{bot="matty",kind="script",le="0.1"} 1`,
		`brain_seconds_bucket{bot="matty",kind="script",le="1"} 2`,
		`brain_seconds_bucket{bot="matty",kind="script",le="+Inf"} 2`,
		`brain_seconds_sum{bot="matty",kind="script"} 0.55`,
		`brain_seconds_count{bot="matty",kind="script"} 2`,
		`brain_seconds_count{bot="finn",kind="exec"} 1`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

func TestLabelKey(t *testing.T) {
	tests := []struct {
		name   string
		names  []string
		values []string
		want   string
	}{
		{"no labels", nil, nil, ""},
		{"plain", []string{"bot", "kind"}, []string{"matty", "script"}, `{bot="matty",kind="script"}`},
		{"missing value", []string{"bot", "kind"}, []string{"matty"}, `{bot="matty",kind=""}`},
		{"quote", []string{"bot"}, []string{`a"b`}, `{bot="a\"b"}`},
		{"backslash", []string{"bot"}, []string{`a\b`}, `{bot="a\\b"}`},
		{"newline", []string{"bot"}, []string{"a\nb"}, `{bot="a\nb"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := labelKey(tc.names, tc.values); got != tc.want {
				t.Errorf("labelKey(%q, %q) = %s, want %s", tc.names, tc.values, got, tc.want)
			}
		})
	}
}

// TestReadText reads back what WriteText wrote, series by series.
func TestReadText(t *testing.T) {
	r := New()
	c := r.NewCounter("events_total", "Events.", "platform")
	c.Add(2, "telegram")
	c.Inc("a b")
	r.NewCounterFunc("kept_total", "Kept elsewhere.", func() float64 { return 1.5 })
	h := r.NewHistogram("brain_seconds", "Brain time.", []float64{0.1}, "bot")
	h.Observe(0.05, "matty")
	var sb strings.Builder
	r.WriteText(&sb)
	got, err := ReadText(strings.NewReader(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`events_total{platform="telegram"}`:           2,
		`events_total{platform="a b"}`:                1,
		"kept_total":                                  1.5,
		`brain_seconds_bucket{bot="matty",le="0.1"}`:  1,
		`brain_seconds_bucket{bot="matty",le="+Inf"}`: 1,
		`brain_seconds_sum{bot="matty"}`:              0.05,
		`brain_seconds_count{bot="matty"}`:            1,
	}
	if !maps.Equal(got, want) {
		t.Errorf("ReadText = %v, want %v", got, want)
	}
	for _, bad := range []string{"depth", "depth three", " 3"} {
		if _, err := ReadText(strings.NewReader(bad + "\n")); err == nil {
			t.Errorf("ReadText(%q): no error", bad)
		}
	}
}

func FuzzReadText(f *testing.F) {
	f.Add("# TYPE x counter\nx 1\n")
	f.Add(`x{a="b c"} +Inf` + "\n\n")
	f.Add("x")
	f.Fuzz(func(t *testing.T, in string) {
		vals, err := ReadText(strings.NewReader(in))
		if err != nil && vals != nil {
			t.Errorf("values %v with error %v", vals, err)
		}
	})
}
