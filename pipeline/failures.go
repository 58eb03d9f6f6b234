package pipeline

import (
	"log/slog"
	"sync"
)

// failureMemory is what the last pass of each installation failed on, in
// this process, so that an item failing the same way pass after pass is
// warned about once: the first time, and again when its reason changes.
type failureMemory struct {
	mu   sync.Mutex
	last map[string]map[string]string // installation -> external id -> reason
}

// known reports whether the installation's last pass failed externalID
// for the same reason.
func (m *failureMemory) known(installation, externalID, reason string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.last[installation][externalID]
	return ok && r == reason
}

// remember replaces what the installation's last pass failed on.
func (m *failureMemory) remember(installation string, failures []Failure) {
	now := make(map[string]string, len(failures))
	for _, f := range failures {
		now[f.ExternalID] = f.Reason
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[string]map[string]string{}
	}
	m.last[installation] = now
}

// failureLevel is the level an item failure is logged at: WARN the first
// time, DEBUG when the last pass failed it the same way, and DEBUG in a
// pass a person watches (a Progress: its command prints every failure
// in its summary, so a WARN would say it twice).
func (ps *pass) failureLevel(externalID, reason string) slog.Level {
	if ps.prog != nil || ps.p.failures.known(ps.inst.ID, externalID, reason) {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// passLevel is the level of the line that closes a pass: WARN for one
// that stopped on an error, INFO otherwise, and INFO for a pass a person
// watches (its command reports the error itself).
func (ps *pass) passLevel(err error) slog.Level {
	if err != nil && ps.prog == nil {
		return slog.LevelWarn
	}
	return slog.LevelInfo
}
