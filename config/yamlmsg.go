package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"
)

// The YAML decoder says a value is of the wrong kind in its own and Go's
// words: "cannot construct !!timestamp `2024-01-01` into time.Duration".
// plainDecodeMessage says it in the configuration's: the key, the form
// it takes, and what was written instead. It is a function of the
// decoder's message and the node decoded alone, so it moves with the
// configuration's decoding wherever that lives.

// constructMsg matches the decoder's message: the tag, the value when it
// names one, the Go type.
var constructMsg = regexp.MustCompile("^cannot construct (!![a-z]+)(?: `(.*)`)? into (\\S+)(?: \\(TextUnmarshaler\\))?$")

// plainDecodeMessage rewrites msg, one of the decoder's, for the value at
// line:col under n ("" keys at the top, else the block's name as where
// already says). A message it does not know is returned as it is.
func plainDecodeMessage(msg string, n *yaml.Node, line, col int) string {
	m := constructMsg.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	tag, value, goType := m[1], m[2], m[3]
	key := keyAt(n, line, col, "")
	if key == "" {
		key = "the value"
	}
	return fmt.Sprintf("%s must be %s, not %s", key, expectedForm(goType), written(tag, value))
}

// keyAt is the dotted path (list items as [i]) of the value at line:col
// under n, "" when none is there. col 0 matches any column of the line.
func keyAt(n *yaml.Node, line, col int, path string) string {
	at := func(v *yaml.Node) bool { return v.Line == line && (col == 0 || v.Column == col) }
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if k := keyAt(c, line, col, path); k != "" {
				return k
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := n.Content[i].Value
			if path != "" {
				p = path + "." + p
			}
			if at(n.Content[i+1]) {
				return p
			}
			if k := keyAt(n.Content[i+1], line, col, p); k != "" {
				return k
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			if at(c) {
				return p
			}
			if k := keyAt(c, line, col, p); k != "" {
				return k
			}
		}
	}
	return ""
}

// expectedForm names what a Go type takes, in the words of a YAML file.
func expectedForm(goType string) string {
	t := strings.TrimLeft(goType, "*")
	switch {
	case t == "time.Duration" || t == "config.Duration" || strings.HasSuffix(t, ".Duration"):
		return "a duration (like 30s, 10m, 1h)"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "[]string":
		return "a list of strings"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	default: // maps and structs
		return "a mapping (key: value)"
	}
}

// written names what was written: the value with its kind, or the kind
// of a collection.
func written(tag, value string) string {
	kind := map[string]string{"!!map": "a mapping", "!!seq": "a list", "!!str": "", "!!int": "the whole number",
		"!!float": "the number", "!!bool": "", "!!timestamp": "the date", "!!null": "nothing", "!!binary": "binary data"}[tag]
	switch {
	case value == "" && kind == "":
		return "another kind of value"
	case value == "":
		return kind
	case kind == "" || tag == "!!null":
		return strconv.Quote(value)
	default:
		return kind + " " + strconv.Quote(value)
	}
}
