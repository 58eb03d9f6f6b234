package mcpserver

import (
	"context"
	"log/slog"
)

// sdkLogger is l for the SDK: its INFO lines ("server connecting",
// "server session connected" with an empty session_id on every stateless
// HTTP request, "server run start") are per-connection chatter, so they
// are written at DEBUG; its warnings and errors keep their level. nil
// stays nil (the SDK discards).
func sdkLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	return slog.New(demoted{l.Handler()})
}

// demoted writes INFO records at DEBUG.
type demoted struct{ next slog.Handler }

func (d demoted) Enabled(ctx context.Context, level slog.Level) bool {
	return d.next.Enabled(ctx, demote(level))
}

func (d demoted) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return d.next.Handle(ctx, r)
}

func (d demoted) WithAttrs(attrs []slog.Attr) slog.Handler { return demoted{d.next.WithAttrs(attrs)} }
func (d demoted) WithGroup(name string) slog.Handler       { return demoted{d.next.WithGroup(name)} }

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}
