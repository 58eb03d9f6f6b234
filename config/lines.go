package config

import "fmt"

// What a caller turning the configuration into options needs to refuse
// a value at its place: the file, its folder, the line of a key, and an
// *Error there. The values are the caller's to check (a variable that is
// unset, a certificate that does not load); where they are written is
// this package's.

// File is the path of the file the configuration came from.
func (c *Config) File() string { return c.path }

// Dir is the file's folder: relative paths in it are relative to it.
func (c *Config) Dir() string { return c.dir }

// At is msg as an *Error at line of the file (0: the file as a whole).
func (c *Config) At(line int, msg string) *Error {
	return &Error{Path: c.path, Line: line, Msg: msg}
}

// Errorf is At with a formatted message.
func (c *Config) Errorf(line int, format string, args ...any) *Error {
	return c.At(line, fmt.Sprintf(format, args...))
}

// Line is the line of the installation's entry.
func (ic InstallationConfig) Line() int { return ic.line }

// Line is the line of the upstream's entry, else of the gateway block.
func (u GatewayUpstreamConfig) Line() int { return u.line }

// ToolLine is the line of the upstream's declaration of tool, when it
// has one.
func (u GatewayUpstreamConfig) ToolLine(tool string) (int, bool) {
	l, ok := u.toolLines[tool]
	return l, ok
}
