package main

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/switchboard-chat/switchboard/brains/script"
	"github.com/switchboard-chat/switchboard/config"
)

// The config validator must accept exactly the template helpers the
// script brain provides.
func TestScriptTemplateFuncsInStep(t *testing.T) {
	got, want := slices.Sorted(slices.Values(config.ScriptTemplateFuncs)), script.FuncNames()
	if !slices.Equal(got, want) {
		t.Errorf("config.ScriptTemplateFuncs = %v, script.FuncNames() = %v", got, want)
	}
}

// Every bot of the example configuration builds, brain included.
func TestExampleConfigBuilds(t *testing.T) {
	cfg, err := config.Load("../..")
	if err != nil {
		t.Fatal(err)
	}
	var set brainSet
	if _, err := set.roster(cfg, slog.Default()); err != nil {
		t.Fatal(err)
	}
	if _, err := buildDirectory(cfg); err != nil {
		t.Fatal(err)
	}
}
