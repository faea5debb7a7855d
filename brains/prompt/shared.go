package prompt

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/switchboard-chat/switchboard/brains"
)

// SharedContextHeading heads the shared context block (Turn.Shared),
// which SPEC §10.7 writes as
//
//	SHARED CONTEXT
//	Events: Researcher: started the survey; Coder: compared the APIs
//	Entities: competitor-x {"pricing":"$99/month"}; competitor-y {}
//	Facts: CompetitorX pricing_valid true (0.95, Auditor)
//	Artifact chain: 1. Researcher produced competitors.json from —; 2. Coder produced api-comparison.json from competitors.json
//
// one line a kind, oldest first, items joined by "; ", a kind with no
// items left out. An event is "Bot: text"; an entity its name and
// attributes (the name alone when it has none); a fact "subject
// predicate object (confidence, Bot)"; a step "N. Producer produced
// OUTPUTS from INPUTS", file names joined by ", ", "nothing" for no
// outputs and "—" for no inputs, followed by " (failed)" when the step
// failed. A text of several lines keeps its later lines indented under
// its line. A brain with a working directory gets one more line naming
// the outputs' files there (ArtifactsDir).
const SharedContextHeading = "SHARED CONTEXT"

// ArtifactsDir is the directory of a brain's working directory where
// the outputs of the turn's artifact chain are files, one a name, the
// newest output of each (brains.SharedContext.Outputs).
const ArtifactsDir = "artifacts"

// sharedContext is the SHARED CONTEXT block of c, left out when c is nil
// or empty.
func sharedContext(c *brains.SharedContext, workdir bool) block {
	if c.Empty() {
		return block{}
	}
	var lines []string
	add := func(title string, items []string) {
		if len(items) > 0 {
			lines = append(lines, title+": "+strings.Join(items, "; "))
		}
	}
	add("Events", each(c.Events, func(e brains.ContextEvent) string {
		return e.Bot + ": " + indent(e.Text)
	}))
	add("Entities", each(c.Entities, func(e brains.ContextEntity) string {
		if a := strings.TrimSpace(e.Attributes); a != "" && a != "{}" {
			return e.Name + " " + a
		}
		return e.Name
	}))
	add("Facts", each(c.Facts, func(f brains.ContextFact) string {
		return fmt.Sprintf("%s %s %s (%s, %s)", indent(f.Subject), indent(f.Predicate), indent(f.Object),
			strconv.FormatFloat(f.Confidence, 'f', -1, 64), f.Bot)
	}))
	add("Artifact chain", each(c.Chain, chainStep))
	if workdir {
		var files []string
		for _, a := range c.Outputs() {
			// The exec brain writes no file under a name that is a path.
			if brains.CheckArtifactName(a.Name) == nil {
				files = append(files, ArtifactsDir+"/"+a.Name)
			}
		}
		if len(files) > 0 {
			lines = append(lines, "Artifact files (in your working directory, the newest of each name): "+strings.Join(files, ", "))
		}
	}
	return headed(SharedContextHeading, lines)
}

// chainStep is one step of the artifact chain:
// "2. Coder produced api-comparison.json from competitors.json".
func chainStep(s brains.ChainStep) string {
	line := fmt.Sprintf("%d. %s produced %s from %s", s.Step, s.Producer,
		fileNames(s.Outputs, "nothing"), fileNames(s.Inputs, "—"))
	if s.Status != "" && s.Status != "done" {
		line += " (" + s.Status + ")"
	}
	return line
}

// fileNames joins the artifacts' names with ", ", or is none.
func fileNames(arts []brains.Artifact, none string) string {
	if len(arts) == 0 {
		return none
	}
	names := make([]string, len(arts))
	for i, a := range arts {
		names[i] = a.Name
	}
	return strings.Join(names, ", ")
}

// each renders every item of a list.
func each[T any](items []T, render func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = render(it)
	}
	return out
}
