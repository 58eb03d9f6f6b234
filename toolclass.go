package ingestd

// ToolClass is what a host's tool can do with its arguments, which is
// what decides whether a turn that read untrusted text may call it. The
// host declares each tool's class to its gate (package client); a tool it
// does not declare, or declares with a value this build does not know, is
// a ToolWrite. A tool's own description of itself (an MCP server's
// readOnlyHint and openWorldHint annotations) is not a declaration: a
// server that wants its tool called says what gets it called.
type ToolClass string

// The tool classes, from the least to the most a call can do.
const (
	// ToolRead is a closed-world read-only tool: it reads what the host
	// already holds (the calendar, a document by id, ingestd itself) and
	// changes nothing, and its arguments reach no address the model
	// chooses. Whatever an injection makes it read only returns to the
	// same tainted context, so a turn over untrusted text may call it.
	ToolRead ToolClass = "read"
	// ToolReadOpen is a read-only tool whose arguments reach an address
	// the model chooses: fetch a URL, search the web. Its arguments can
	// carry the context out (an exfiltration is a GET), so it is blocked
	// like a write.
	ToolReadOpen ToolClass = "read_open"
	// ToolWrite is every tool with a side effect, and every tool not
	// declared otherwise.
	ToolWrite ToolClass = "write"
)

// ToolClasses is a set of tool classes, written in the order ToolRead,
// ToolReadOpen, ToolWrite without repeats (what AllToolClasses and
// ToolClassesOf return, and what a verdict carries). Nil and empty are
// the empty set.
type ToolClasses []ToolClass

// AllToolClasses is every class: what a turn may use when no untrusted
// text was served, or when the firewall is in shadow or off mode.
func AllToolClasses() ToolClasses { return ToolClasses{ToolRead, ToolReadOpen, ToolWrite} }

// ToolClassesOf returns the set of the known classes among cs, in order.
// A value this build does not know is left out: a set never grants what
// it cannot name.
func ToolClassesOf(cs ...ToolClass) ToolClasses {
	out := ToolClasses{}
	for _, c := range AllToolClasses() {
		for _, x := range cs {
			if x == c {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// Has reports whether c is in the set. A class this build does not know
// is a ToolWrite (see ToolClass), so it is in the set only when writes are.
func (s ToolClasses) Has(c ToolClass) bool {
	if !c.Known() {
		c = ToolWrite
	}
	for _, x := range s {
		if x == c {
			return true
		}
	}
	return false
}

// Known reports whether c is one of the three classes.
func (c ToolClass) Known() bool {
	return c == ToolRead || c == ToolReadOpen || c == ToolWrite
}

// Canonical reports whether s is written as a set is: known classes, in
// order, without repeats.
func (s ToolClasses) Canonical() bool {
	want := ToolClassesOf(s...)
	if len(want) != len(s) {
		return false
	}
	for i := range s {
		if s[i] != want[i] {
			return false
		}
	}
	return true
}

// Equal reports whether s and t hold the same classes.
func (s ToolClasses) Equal(t ToolClasses) bool {
	a, b := ToolClassesOf(s...), ToolClassesOf(t...)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
