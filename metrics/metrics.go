// Package metrics keeps Switchboard's counters, gauges and histograms and
// writes them in the Prometheus text exposition format (SPEC §8). It has
// no dependencies: the few metric kinds the gateway needs are simple.
package metrics

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Registry holds metrics by name.
type Registry struct {
	mu      sync.Mutex
	metrics map[string]metric
	order   []string
}

type metric interface {
	write(w io.Writer, name string)
}

// New returns an empty registry.
func New() *Registry { return &Registry{metrics: make(map[string]metric)} }

func (r *Registry) add(name string, m metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.metrics[name]; !dup {
		r.order = append(r.order, name)
	}
	r.metrics[name] = m
}

// WriteText writes every metric in the Prometheus text format.
func (r *Registry) WriteText(w io.Writer) {
	r.mu.Lock()
	names := slices.Clone(r.order)
	ms := make([]metric, len(names))
	for i, n := range names {
		ms[i] = r.metrics[n]
	}
	r.mu.Unlock()
	for i, n := range names {
		ms[i].write(w, n)
	}
}

// Counter is a monotonically increasing value per label set.
type Counter struct {
	help   string
	labels []string
	mu     sync.Mutex
	vals   map[string]float64
	keys   keyCache
}

// NewCounter registers a counter with label names.
func (r *Registry) NewCounter(name, help string, labels ...string) *Counter {
	c := &Counter{help: help, labels: labels, vals: make(map[string]float64), keys: make(keyCache)}
	r.add(name, c)
	return c
}

// Add adds v for the label values (in the order the labels were named).
func (c *Counter) Add(v float64, values ...string) {
	c.mu.Lock()
	c.vals[c.keys.key(c.labels, values)] += v
	c.mu.Unlock()
}

// keyCache maps the label values of a metric with at most two labels to
// their series' key, so that counting (per message, for some metrics)
// builds no string.
type keyCache map[[2]string]string

// key returns the series key of values. Callers hold the metric's mutex.
func (kc keyCache) key(names, values []string) string {
	if len(names) > 2 || len(values) != len(names) {
		return labelKey(names, values)
	}
	var k [2]string
	copy(k[:], values)
	if key, ok := kc[k]; ok {
		return key
	}
	key := labelKey(names, values)
	kc[k] = key
	return key
}

// Inc adds one.
func (c *Counter) Inc(values ...string) { c.Add(1, values...) }

func (c *Counter) write(w io.Writer, name string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", name, c.help, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range sortedKeys(c.vals) {
		fmt.Fprintf(w, "%s%s %s\n", name, k, num(c.vals[k]))
	}
}

// Gauge reports a value read when metrics are written.
type Gauge struct {
	help string
	kind string // "gauge", or "counter" for a counter kept elsewhere
	read func() float64
}

// NewGaugeFunc registers a gauge whose value read returns.
func (r *Registry) NewGaugeFunc(name, help string, read func() float64) {
	r.add(name, &Gauge{help: help, kind: "gauge", read: read})
}

// NewCounterFunc registers a counter kept elsewhere, whose value read
// returns; read must never return less than it did before.
func (r *Registry) NewCounterFunc(name, help string, read func() float64) {
	r.add(name, &Gauge{help: help, kind: "counter", read: read})
}

func (g *Gauge) write(w io.Writer, name string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", name, g.help, name, g.kind, name, num(g.read()))
}

// Histogram counts observations into buckets per label set.
type Histogram struct {
	help    string
	labels  []string
	buckets []float64
	mu      sync.Mutex
	series  map[string]*series
	keys    keyCache
}

type series struct {
	counts []uint64
	sum    float64
	count  uint64
}

// DefaultBuckets suit brain turns: 5 ms to 5 min.
var DefaultBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// NewHistogram registers a histogram with upper bounds buckets.
func (r *Registry) NewHistogram(name, help string, buckets []float64, labels ...string) *Histogram {
	h := &Histogram{help: help, labels: labels, buckets: buckets, series: make(map[string]*series), keys: make(keyCache)}
	r.add(name, h)
	return h
}

// Observe records v for the label values.
func (h *Histogram) Observe(v float64, values ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key := h.keys.key(h.labels, values)
	s := h.series[key]
	if s == nil {
		s = &series{counts: make([]uint64, len(h.buckets))}
		h.series[key] = s
	}
	for i, b := range h.buckets {
		if v <= b {
			s.counts[i]++
		}
	}
	s.sum += v
	s.count++
}

func (h *Histogram) write(w io.Writer, name string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, h.help, name)
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := make([]string, 0, len(h.series))
	for k := range h.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := h.series[k]
		inner := strings.TrimSuffix(strings.TrimPrefix(k, "{"), "}")
		sep := ""
		if inner != "" {
			sep = ","
		}
		for i, b := range h.buckets {
			fmt.Fprintf(w, "%s_bucket{%s%sle=%q} %d\n", name, inner, sep, num(b), s.counts[i])
		}
		fmt.Fprintf(w, "%s_bucket{%s%sle=\"+Inf\"} %d\n", name, inner, sep, s.count)
		fmt.Fprintf(w, "%s_sum%s %s\n%s_count%s %d\n", name, k, num(s.sum), name, k, s.count)
	}
}

// labelEscaper escapes a label value.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// labelKey renders {a="x",b="y"}, escaping values.
func labelKey(names, values []string) string {
	if len(names) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			sb.WriteByte(',')
		}
		v := ""
		if i < len(values) {
			v = values[i]
		}
		if strings.ContainsAny(v, "\\\"\n") {
			v = labelEscaper.Replace(v)
		}
		sb.WriteString(n)
		sb.WriteString(`="`)
		sb.WriteString(v)
		sb.WriteByte('"')
	}
	sb.WriteByte('}')
	return sb.String()
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%g", v)
}
