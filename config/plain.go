package config

import (
	"fmt"

	"go.yaml.in/yaml/v4"
)

// maxConfigNodes bounds the configuration as its aliases expand it: a
// real file is a few thousand nodes; ten anchors of ten aliases each
// ("billion laughs") would be ten billion.
const maxConfigNodes = 1 << 18

// plainTree is the one rule every block of the configuration passes
// before anything decodes it, whoever decodes it (the strict decoder,
// the hand-walked installations, a connector's block): it rewrites the
// parsed document in place into a tree where each mapping holds every
// key once, spelled as itself.
//
//   - A key given twice in one mapping is refused, naming file:line of
//     both: in any block, at any depth, block or flow style, however it
//     is quoted, escaped, tagged or written (`? key`), or reached through
//     an alias. YAML's "last one wins" would let a second `tier:` further
//     down an installation override the first; a second `installations:`
//     would drop the first list.
//   - A merge key (`<<: *base`, `<<: [*a, *b]`) is expanded into the keys
//     it brings. A key it brings that the mapping also gives, or that two
//     merged mappings both give, counts as given twice and is refused:
//     YAML lets the explicit key override, but in a security
//     configuration an override is a second declaration that reads like
//     none.
//   - Aliases are replaced by the node they name, so every later walk
//     sees what the parser saw; a loop of aliases is refused, and so is a
//     tree that aliases expand beyond maxConfigNodes.
//   - A key must be a scalar (a name), never a mapping or a list.
//
// Keys compare by their value, so `tier`, `"tier"`, `'tier'`,
// `"ti\x65r"` and `!!str tier` are one key. Keys are case-sensitive, as
// YAML says: `Tier` is another key, which the strict decode refuses as
// unknown.
func plainTree(path string, doc *yaml.Node) error {
	p := &planer{path: path, state: map[*yaml.Node]int{}, size: map[*yaml.Node]int{}}
	if _, err := p.node(doc); err != nil {
		return err
	}
	if n := p.count(doc); n > maxConfigNodes {
		return &Error{Path: path, Line: 1, Msg: fmt.Sprintf("the configuration's aliases expand it to more than %d nodes", maxConfigNodes)}
	}
	return nil
}

// planer carries plainTree's walk.
type planer struct {
	path  string
	state map[*yaml.Node]int // 1 while a node is being planed, 2 once done
	size  map[*yaml.Node]int // expanded size of a done node
}

// occurrence is where a key was given: its own line and, for a key a
// merge key brought, the line of that "<<".
type occurrence struct {
	line, merge int
}

func (o occurrence) String(path string) string {
	if o.merge > 0 {
		return fmt.Sprintf("%s:%d (merged by the \"<<\" at line %d)", path, o.line, o.merge)
	}
	return fmt.Sprintf("%s:%d", path, o.line)
}

// node planes n and returns what stands in its place: n itself, or for
// an alias the node it names.
func (p *planer) node(n *yaml.Node) (*yaml.Node, error) {
	for n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil, &Error{Path: p.path, Line: n.Line, Msg: fmt.Sprintf("unknown anchor %q", n.Value)}
		}
		n = n.Alias
	}
	switch p.state[n] {
	case 2:
		return n, nil
	case 1:
		return nil, &Error{Path: p.path, Line: n.Line, Msg: "an alias refers to the node it is inside"}
	}
	p.state[n] = 1
	var err error
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for i, c := range n.Content {
			if n.Content[i], err = p.node(c); err != nil {
				return nil, err
			}
		}
	case yaml.MappingNode:
		err = p.mapping(n)
	}
	if err != nil {
		return nil, err
	}
	p.state[n] = 2
	return n, nil
}

// mapping planes a mapping: its keys resolved, its merge keys expanded,
// each key once.
func (p *planer) mapping(n *yaml.Node) error {
	seen := map[string]occurrence{}
	var out []*yaml.Node
	add := func(k, v *yaml.Node, at occurrence) error {
		if prev, dup := seen[k.Value]; dup {
			line := at.line
			if at.merge > 0 {
				line = at.merge // the mapping at fault is the one merging
			}
			return &Error{Path: p.path, Line: line, Msg: fmt.Sprintf("key %q is given twice: first at %s, again at %s; give each key once (a merge key's keys included)",
				k.Value, prev.String(p.path), at.String(p.path))}
		}
		seen[k.Value] = at
		out = append(out, k, v)
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := p.node(n.Content[i])
		if err != nil {
			return err
		}
		if k.Kind != yaml.ScalarNode {
			return &Error{Path: p.path, Line: n.Content[i].Line, Msg: "a key must be a name, not a mapping or a list"}
		}
		v, err := p.node(n.Content[i+1])
		if err != nil {
			return err
		}
		if k.ShortTag() != "!!merge" {
			if err := add(k, v, occurrence{line: n.Content[i].Line}); err != nil {
				return err
			}
			continue
		}
		// A merged mapping is planed already: its own merge keys are
		// expanded and its keys are unique.
		sources := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			sources = v.Content
		}
		for _, src := range sources {
			if src.Kind != yaml.MappingNode {
				return &Error{Path: p.path, Line: k.Line, Msg: `the merge key "<<" takes a mapping or a list of mappings`}
			}
			for j := 0; j+1 < len(src.Content); j += 2 {
				if err := add(src.Content[j], src.Content[j+1], occurrence{line: src.Content[j].Line, merge: k.Line}); err != nil {
					return err
				}
			}
		}
	}
	n.Content = out
	return nil
}

// count is the size of the tree under n with every shared node counted
// where it appears, stopping past maxConfigNodes.
func (p *planer) count(n *yaml.Node) int {
	if s, ok := p.size[n]; ok {
		return s
	}
	s := 1
	for _, c := range n.Content {
		if s += p.count(c); s > maxConfigNodes {
			break
		}
	}
	p.size[n] = s
	return s
}
