package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// readMetrics reads metrics in the Prometheus text format into their values
// by series: the metric's name with its labels as the text format writes
// them, sorted by name, such as `switchboard_events_in_total{platform="web"}`.
// A histogram gives one series per bucket (name_bucket, with le last) and
// its name_sum and name_count.
func readMetrics(r io.Reader) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	vals := make(map[string]float64)
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := m.GetLabel()
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				vals[name+seriesLabels(labels, "")] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				vals[name+seriesLabels(labels, "")] = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				vals[name+seriesLabels(labels, "")] = m.GetUntyped().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					vals[name+"_bucket"+seriesLabels(labels, leValue(b.GetUpperBound()))] = float64(b.GetCumulativeCount())
				}
				vals[name+"_bucket"+seriesLabels(labels, "+Inf")] = float64(h.GetSampleCount())
				vals[name+"_sum"+seriesLabels(labels, "")] = h.GetSampleSum()
				vals[name+"_count"+seriesLabels(labels, "")] = float64(h.GetSampleCount())
			default:
				return nil, fmt.Errorf("metrics: %s: unexpected type %s", name, f.GetType())
			}
		}
	}
	return vals, nil
}

// labelEscaper escapes a label value as the text format does.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// seriesLabels renders labels as {a="x",b="y"}, sorted by name, with
// le="…" last when le is not empty; no labels render as "".
func seriesLabels(labels []*dto.LabelPair, le string) string {
	pairs := make([]string, 0, len(labels)+1)
	for _, l := range labels {
		pairs = append(pairs, l.GetName()+`="`+labelEscaper.Replace(l.GetValue())+`"`)
	}
	slices.Sort(pairs)
	if le != "" {
		pairs = append(pairs, `le="`+le+`"`)
	}
	if len(pairs) == 0 {
		return ""
	}
	return "{" + strings.Join(pairs, ",") + "}"
}

// leValue writes a bucket's upper bound as the text format does.
func leValue(v float64) string {
	if math.IsInf(v, +1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// TestObserverMetrics checks what /metrics serves before and after the
// observer is told of events: every metric of SPEC §8 with its type, and
// the series the events add.
func TestObserverMetrics(t *testing.T) {
	o := newObserver()
	o.gauges(func(context.Context) (int, error) { return 4, nil }, func(context.Context) (int, error) { return 7, nil })

	o.EventIn("web")
	o.EventIn("web")
	o.EventOut("telegram")
	o.Delegation("done")
	o.OutboxRetry("discord")
	o.BrainTurn("ada", "script", 20*time.Millisecond)
	o.BrainTurn("ada", "script", 3*time.Second)

	rec := httptest.NewRecorder()
	o.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	for _, want := range []string{
		"# TYPE switchboard_events_in_total counter",
		"# TYPE switchboard_events_out_total counter",
		"# TYPE switchboard_brain_seconds histogram",
		"# TYPE switchboard_delegations_total counter",
		"# TYPE switchboard_outbox_retries_total counter",
		"# TYPE switchboard_session_queue_depth gauge",
		"# TYPE switchboard_outbox_pending gauge",
		"# TYPE switchboard_start_time_seconds gauge",
		"# HELP switchboard_brain_seconds Time brains take for a turn.",
		"# HELP switchboard_events_in_total Inbound messages stored, by platform.",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	vals, err := readMetrics(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		series string
		want   float64
	}{
		{`switchboard_events_in_total{platform="web"}`, 2},
		{`switchboard_events_in_total{platform="telegram"}`, 0},
		{`switchboard_events_out_total{platform="telegram"}`, 1},
		{`switchboard_delegations_total{status="done"}`, 1},
		{`switchboard_delegations_total{status="failed"}`, 0},
		{`switchboard_outbox_retries_total{platform="discord"}`, 1},
		{`switchboard_brain_seconds_bucket{bot="ada",kind="script",le="0.005"}`, 0},
		{`switchboard_brain_seconds_bucket{bot="ada",kind="script",le="0.025"}`, 1},
		{`switchboard_brain_seconds_bucket{bot="ada",kind="script",le="5"}`, 2},
		{`switchboard_brain_seconds_bucket{bot="ada",kind="script",le="300"}`, 2},
		{`switchboard_brain_seconds_bucket{bot="ada",kind="script",le="+Inf"}`, 2},
		{`switchboard_brain_seconds_count{bot="ada",kind="script"}`, 2},
		{`switchboard_brain_seconds_sum{bot="ada",kind="script"}`, 3.02},
		{"switchboard_session_queue_depth", 4},
		{"switchboard_outbox_pending", 7},
	} {
		if got, ok := vals[tt.series]; !ok || math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v\n%s", tt.series, got, ok, tt.want, body)
		}
	}
	if start := vals["switchboard_start_time_seconds"]; math.Abs(start-float64(time.Now().Unix())) > 60 {
		t.Errorf("switchboard_start_time_seconds = %v, want about now", start)
	}
	// Only Switchboard's own metrics: no Go runtime or process collectors.
	for series := range vals {
		if !strings.HasPrefix(series, "switchboard_") {
			t.Errorf("unexpected series %s", series)
		}
	}
}
