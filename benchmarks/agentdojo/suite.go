package agentdojo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
)

// Suite is a suite in the re-shaped AgentDojo format: suite.json beside a
// documents/ folder.
type Suite struct {
	Name            string          `json:"suite"`
	Documents       []Document      `json:"documents"`
	Tools           []Tool          `json:"tools"`
	UserTasks       []Task          `json:"user_tasks"`
	InjectionTasks  []Task          `json:"injection_tasks"`
	InjectionVector []InjectionSpec `json:"injection_vectors"`

	fsys fs.FS
}

// Document is one environment item. AuthoredBy is the answer key
// (internal or external): it scores the labels and the bound, and
// configures nothing.
type Document struct {
	File             string   `json:"file"`
	Kind             string   `json:"kind"`
	AuthoredBy       string   `json:"authored_by"`
	InjectionVectors []string `json:"injection_vectors"`
}

// Tool is one tool of the suite and the class its host declares for it:
// read_closed, read_open or write.
type Tool struct {
	Name  string `json:"name"`
	Class string `json:"class"`
}

// Task is a user or injection task: its prompt (goal) and ground-truth
// calls.
type Task struct {
	ID     string `json:"id"`
	Prompt string `json:"prompt"`
	Goal   string `json:"goal"`
	Calls  []Call `json:"calls"`
}

// Call is one ground-truth tool call and the documents it returns.
type Call struct {
	Tool  string         `json:"tool"`
	Args  map[string]any `json:"args"`
	Reads []string       `json:"reads"`
}

// InjectionSpec is one injection vector and the documents it is placed in.
type InjectionSpec struct {
	ID        string   `json:"id"`
	Documents []string `json:"documents"`
}

// Load reads a suite from fsys (suite.json and documents/) and checks it
// is whole: every document file present, every read naming a document.
func Load(fsys fs.FS) (*Suite, error) {
	raw, err := fs.ReadFile(fsys, "suite.json")
	if err != nil {
		return nil, err
	}
	s := &Suite{fsys: fsys}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("suite.json: %w", err)
	}
	if len(s.Documents) == 0 || len(s.UserTasks) == 0 {
		return nil, errors.New("suite.json: a suite needs documents and user tasks")
	}
	known := map[string]bool{}
	for _, d := range s.Documents {
		if known[d.File] || d.File == "" || path.Base(d.File) != d.File {
			return nil, fmt.Errorf("suite.json: document file %q is empty, a path or listed twice", d.File)
		}
		if _, err := fs.Stat(fsys, path.Join("documents", d.File)); err != nil {
			return nil, fmt.Errorf("document %s: %w", d.File, err)
		}
		known[d.File] = true
	}
	for _, t := range slices.Concat(s.UserTasks, s.InjectionTasks) {
		for _, c := range t.Calls {
			for _, r := range c.Reads {
				if !known[r] {
					return nil, fmt.Errorf("%s: %s reads %q, which is not a document", t.ID, c.Tool, r)
				}
			}
		}
	}
	for _, v := range s.InjectionVector {
		for _, f := range v.Documents {
			if !known[f] {
				return nil, fmt.Errorf("injection vector %s: %q is not a document", v.ID, f)
			}
		}
	}
	if s.Name == "" {
		s.Name = "suite"
	}
	return s, nil
}

// read returns a document file's bytes.
func (s *Suite) read(file string) ([]byte, error) {
	return fs.ReadFile(s.fsys, path.Join("documents", file))
}

// injected is the set of document files that carry an injection vector,
// from the suite's vectors and the documents' own lists.
func (s *Suite) injected() map[string]bool {
	out := map[string]bool{}
	for _, v := range s.InjectionVector {
		for _, f := range v.Documents {
			out[f] = true
		}
	}
	for _, d := range s.Documents {
		if len(d.InjectionVectors) > 0 {
			out[d.File] = true
		}
	}
	return out
}
