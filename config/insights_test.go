package config

import (
	"strings"
	"testing"
)

func TestSharedInsights(t *testing.T) {
	cfg := mustLoad(t, writeDir(t, minimalBots, minimalUsers))
	if got := cfg.Shared.Insights; got != (SharedInsights{Enabled: true, ConfidenceThreshold: 0.7, Limit: 3}) {
		t.Errorf("defaults = %+v", got)
	}
	cfg = mustLoad(t, writeDir(t, minimalBots+"shared:\n  insights: {enabled: false, confidence_threshold: 0, limit: 0}\n", minimalUsers))
	if got := cfg.Shared.Insights; got != (SharedInsights{}) {
		t.Errorf("written as zero = %+v", got)
	}
	cfg = mustLoad(t, writeDir(t, minimalBots+"shared:\n  insights: {limit: 5}\n", minimalUsers))
	if got := cfg.Shared.Insights; got != (SharedInsights{Enabled: true, ConfidenceThreshold: 0.7, Limit: 5}) {
		t.Errorf("only the limit written = %+v", got)
	}
	for _, tc := range []struct{ yaml, key, msg string }{
		{"shared:\n  insights: {confidence_threshold: 1.5}\n", "shared.insights.confidence_threshold", "between 0 and 1"},
		{"shared:\n  insights: {confidence_threshold: -0.1}\n", "shared.insights.confidence_threshold", "between 0 and 1"},
		{"shared:\n  insights: {confidence_threshold: .nan}\n", "shared.insights.confidence_threshold", "between 0 and 1"},
		{"shared:\n  insights: {limit: -1}\n", "shared.insights.limit", ""},
		{"shared:\n  insights: {enabled: maybe}\n", "shared.insights.enabled", ""},
		{"shared:\n  insights: {threshold: 0.5}\n", "shared.insights.threshold", "unknown key"},
	} {
		errs := loadErrors(t, writeDir(t, minimalBots+tc.yaml, minimalUsers))
		if e := findError(t, errs, BotsFile, tc.key); !strings.Contains(e.Message, tc.msg) || e.Line == 0 {
			t.Errorf("%s: %q (line %d), want %q with a line", tc.key, e.Message, e.Line, tc.msg)
		}
	}
}
