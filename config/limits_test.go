package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30s", 30 * time.Second, true},
		{"0", 0, true},
		{"30d", 30 * 24 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"1d1h30m", 25*time.Hour + 30*time.Minute, true},
		{"-2d", -48 * time.Hour, true},
		{"+1d", 24 * time.Hour, true},
		{"0d", 0, true},
		{"1.5d", 0, false},
		{"d", 0, false},
		{"1d-1h", 0, false},
		{"1dx", 0, false},
		{"30 days", 0, false},
		{"106752d", 0, false}, // more than a time.Duration holds
		{"106751d23h59m", 0, false},
		{"99999999999999999999d", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}

// FuzzParseDuration: never a panic; without days, what time.ParseDuration
// says; with days, never an overflow to the other sign.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30d", "1d12h", "-2d", "5m", "106751d", "1d-1h", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseDuration(s)
		if !daysRE.MatchString(s) {
			want, werr := time.ParseDuration(s)
			if got != want || (err == nil) != (werr == nil) {
				t.Fatalf("ParseDuration(%q) = %v, %v; time.ParseDuration says %v, %v", s, got, err, want, werr)
			}
			return
		}
		if err == nil && (got < 0) != strings.HasPrefix(s, "-") && got != 0 {
			t.Fatalf("ParseDuration(%q) = %v: wrong sign", s, got)
		}
	})
}

func TestRetentionSettings(t *testing.T) {
	tests := []struct {
		name, gateway string
		want          Retention
	}{
		{"defaults", "", Retention{Anonymous: 30 * 24 * time.Hour}},
		{"in days", "gateway:\n  retention: {anonymous: 7d, messages: 365d}\n", Retention{Anonymous: 7 * 24 * time.Hour, Messages: 365 * 24 * time.Hour}},
		{"kept forever", "gateway:\n  retention: {anonymous: 0}\n", Retention{}},
		{"short, for tests", "gateway:\n  retention: {anonymous: 2s}\n", Retention{Anonymous: 2 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustLoad(t, writeDir(t, tc.gateway+minimalBots, minimalUsers))
			if cfg.Gateway.Retention != tc.want {
				t.Errorf("retention = %+v, want %+v", cfg.Gateway.Retention, tc.want)
			}
		})
	}
}

// TestLoadRefusesLargeFiles: a file over MaxFileSize is refused unread,
// with its name and the limit; a file of exactly the limit is read.
func TestLoadRefusesLargeFiles(t *testing.T) {
	big := minimalBots + "# " + strings.Repeat("x", 2<<20) + "\n"
	exact := minimalBots + "# " + strings.Repeat("x", MaxFileSize-len(minimalBots)-3) + "\n"
	tests := []struct {
		name, bots, users string
		want              []string // the files refused
	}{
		{"bots.yaml", big, minimalUsers, []string{BotsFile}},
		{"users.yaml", minimalBots, minimalUsers + "# " + strings.Repeat("x", MaxFileSize) + "\n", []string{UsersFile}},
		{"both", big, big, []string{BotsFile, UsersFile}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := loadErrors(t, writeDir(t, tc.bots, tc.users))
			if len(errs) != len(tc.want) {
				t.Fatalf("errors = %v, want one for each of %v", errs, tc.want)
			}
			for i, e := range errs {
				if e.File != tc.want[i] || !strings.Contains(e.Message, "over the limit of 1 MiB (1048576 bytes); it was not read") {
					t.Errorf("error = %q", e.Error())
				}
			}
		})
	}
	if len(exact) != MaxFileSize {
		t.Fatalf("exact is %d bytes", len(exact))
	}
	mustLoad(t, writeDir(t, exact, minimalUsers))
	dir := writeDir(t, minimalBots, minimalUsers)
	os.Remove(filepath.Join(dir, UsersFile))
	os.Mkdir(filepath.Join(dir, UsersFile), 0o755)
	if errs := loadErrors(t, dir); len(errs) != 1 || errs[0].Error() != "users.yaml: not a regular file" {
		t.Errorf("a directory for users.yaml: %v", errs)
	}
}

// TestManyErrorsStayCheap: a file with a problem on every line (here
// 3,000 bots, each with an unknown key and an invalid ID) is reported
// whole, each problem once; checking whether a key's ancestor already
// has a problem used to compare every pair.
func TestManyErrorsStayCheap(t *testing.T) {
	var b strings.Builder
	b.WriteString("bots:\n")
	for i := range 3_000 {
		fmt.Fprintf(&b, "  - {id: B%d, colour: red, brain: {kind: script, default: hi}}\n", i)
	}
	errs := loadErrors(t, writeDir(t, b.String(), minimalUsers))
	if len(errs) != 6_000 {
		t.Errorf("%d errors, want 6000", len(errs))
	}
}

// TestLoadContextReturnsWhenCancelled: LoadContext gives up on a load at
// once when its context ends.
func TestLoadContextReturnsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := LoadContext(ctx, writeDir(t, minimalBots, minimalUsers)); !errors.Is(err, context.Canceled) {
		t.Errorf("LoadContext = %v, want context.Canceled", err)
	}
	if cfg, err := LoadContext(context.Background(), writeDir(t, minimalBots, minimalUsers)); err != nil || len(cfg.Bots) != 1 {
		t.Errorf("LoadContext = %v, %v", cfg, err)
	}
}
