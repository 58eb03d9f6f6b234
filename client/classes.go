package client

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ingestd/ingestd"
)

// Classes is a host's declaration of its tools' classes, by tool name:
// {"calendar_read": read, "fetch_url": read_open, "send_email": write}.
// A tool it does not name, or names with a class this build does not
// know, is a write (Of), so a tool added to the host without a
// declaration is blocked after untrusted text rather than allowed.
type Classes map[string]ingestd.ToolClass

// Of returns the declared class of the tool name: ingestd.ToolWrite when
// it is not declared or declared with an unknown class.
func (c Classes) Of(name string) ingestd.ToolClass {
	if k, ok := c[name]; ok && k.Known() {
		return k
	}
	return ingestd.ToolWrite
}

// Allows reports whether the turn under v may call a tool of class c: c
// is in the verdict's allowed classes (a class that is not one of the
// three counts as a write). A verdict that is nil or malformed (see
// Validate) allows no class, unless FailOpen is given, when it allows
// every class. The gate's other functions are this, tool by tool.
func Allows(v *ingestd.Verdict, c ingestd.ToolClass, opts ...GateOption) bool {
	var g gate
	for _, o := range opts {
		o(&g)
	}
	if err := Validate(v); err != nil {
		return g.failOpen
	}
	return classesOf(v).Has(c)
}

// AllowedToolsByClass returns the tools the turn may use under v, each
// judged by the class the host declared for it (class; Classes.Of over
// the tool's name is the usual one): every tool when the verdict allows
// tools, the closed-world reads (ingestd.ToolRead) when it allows only
// those, none when it allows no class or cannot be trusted (unless
// FailOpen). The input slice is never modified; the result is a new
// slice or nil.
func AllowedToolsByClass[T any](v *ingestd.Verdict, tools []T, class func(T) ingestd.ToolClass, opts ...GateOption) []T {
	var out []T
	for _, t := range tools {
		if Allows(v, class(t), opts...) {
			out = append(out, t)
		}
	}
	return out
}

// AllowedToolsByClassJSON is AllowedToolsByClass over a raw POST
// /v1/retrieve (or Connect JSON) response body, read as AllowedToolsJSON
// reads it.
func AllowedToolsByClassJSON[T any](body []byte, tools []T, class func(T) ingestd.ToolClass, opts ...GateOption) []T {
	v, err := VerdictFromJSON(body)
	if err != nil {
		v = nil
	}
	return AllowedToolsByClass(v, tools, class, opts...)
}

// AllowedToolsByClassMCP is AllowedToolsByClass over the result of an
// MCP retrieve call, read as AllowedToolsMCP reads it.
func AllowedToolsByClassMCP[T any](result any, tools []T, class func(T) ingestd.ToolClass, opts ...GateOption) []T {
	v, err := VerdictFromMCP(result)
	if err != nil {
		v = nil
	}
	return AllowedToolsByClass(v, tools, class, opts...)
}

// MCPToolClass is the class of an MCP server's tool t under the host's
// declaration: the class the host declared for its name, which the
// tool's own annotations can only lower, never raise. A server that says
// its tool is destructive (destructiveHint true) makes it a write. A
// tool the host did not declare is a write whatever it says of itself
// (readOnlyHint true, openWorldHint false): those hints are the server's
// claim, and a server that wants its tool called after untrusted text is
// the one that would make it. openWorldHint does not lower a declared
// read either: servers set it for a tool that returns outsiders' text
// (ingestd's own retrieve does), which says nothing of where its
// arguments go; whether they reach an address the model chooses is the
// host's to declare (read_open).
func MCPToolClass(declared Classes, t *mcp.Tool) ingestd.ToolClass {
	if t == nil {
		return ingestd.ToolWrite
	}
	c := declared.Of(t.Name)
	if a := t.Annotations; a != nil && a.DestructiveHint != nil && *a.DestructiveHint {
		return ingestd.ToolWrite
	}
	return c
}

// AllowedMCPTools is the MCP host's gate: the tools (of any MCP server)
// the turn may use after ingestd's retrieve call returned result, each
// judged by MCPToolClass under the host's declaration. A result it cannot
// read with certainty, or a verdict Validate refuses, allows none
// (unless FailOpen).
func AllowedMCPTools(result any, tools []*mcp.Tool, declared Classes, opts ...GateOption) []*mcp.Tool {
	return AllowedToolsByClassMCP(result, tools, func(t *mcp.Tool) ingestd.ToolClass { return MCPToolClass(declared, t) }, opts...)
}
