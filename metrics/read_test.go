package metrics

import (
	"maps"
	"strings"
	"testing"
)

// TestReadText reads a gateway's exposition series by series.
func TestReadText(t *testing.T) {
	text := `# HELP events_total Events.
# TYPE events_total counter
events_total{platform="telegram"} 2
events_total{platform="a b"} 1

# TYPE kept_total counter
kept_total 1.5
# TYPE brain_seconds histogram
brain_seconds_bucket{bot="matty",le="0.1"} 1
brain_seconds_bucket{bot="matty",le="+Inf"} 1
brain_seconds_sum{bot="matty"} 0.05
brain_seconds_count{bot="matty"} 1
`
	got, err := ReadText(strings.NewReader(text))
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
