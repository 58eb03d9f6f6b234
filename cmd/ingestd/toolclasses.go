package main

import (
	"strings"

	"github.com/ingestd/ingestd"
)

// toolClassesText names the tool classes a verdict allows, for a person:
// "read, read_open, write", "read (closed-world reads only)" or "none".
// A verdict without classes (an older server) allows what tools_allowed
// says.
func toolClassesText(v *ingestd.Verdict) string {
	cs := v.AllowedToolClasses
	if cs == nil && v.ToolsAllowed {
		cs = ingestd.AllToolClasses()
	}
	switch {
	case len(cs) == 0:
		return "none"
	case len(cs) == 1 && cs[0] == ingestd.ToolRead:
		return "read (closed-world reads only)"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = string(c)
	}
	return strings.Join(parts, ", ")
}
