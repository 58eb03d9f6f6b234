package config

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd"
)

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

// InstallationError is a connector's refusal of installation ic (err,
// from building it) at the line of its entry, or at the line the
// connector's own decoding of its block found, never with the file and
// line twice; nil when err is.
func (c *Config) InstallationError(ic InstallationConfig, err error) error {
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		msg := strings.Replace(err.Error(), ce.Error(), ce.Msg, 1)
		return &Error{Path: ce.Path, Line: ce.Line, Msg: msg}
	}
	msg := err.Error()
	var ie *ingestd.Error
	if errors.As(err, &ie) { // its code is for programs
		msg = strings.Replace(msg, ie.Error(), ie.Message, 1)
	}
	return c.At(ic.line, msg)
}

// Located is err as an *Error: err itself when it is one, else err's
// message at line.
func (c *Config) Located(line int, err error) error {
	if ce := (*Error)(nil); errors.As(err, &ce) {
		return err
	}
	return c.At(line, err.Error())
}

// child returns the node of key under the mapping n, nil if none.
func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
