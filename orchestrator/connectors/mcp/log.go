package mcp

import (
	"context"
	"fmt"
	"log/slog"
)

// discardHandler drops every record (a nil Config.Logger).
type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (d discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discardHandler) WithGroup(string) slog.Handler           { return d }

// scrubHandler scrubs a session's secrets out of every message and attribute before they reach the
// pool's handler. With demote set (mcp-go's own lines) Info becomes Debug, as the library is
// chatty, and Error becomes Warn; once the session is out of use (quiet: it broke, which the pool
// logged once, or it is closing) every line of the library is Debug.
type scrubHandler struct {
	h      slog.Handler
	w      *wire
	demote bool
}

func (s *scrubHandler) level(l slog.Level) slog.Level {
	switch {
	case !s.demote:
		return l
	case s.w.quiet.Load():
		return min(l, slog.LevelDebug)
	case l >= slog.LevelError:
		return slog.LevelWarn
	case l == slog.LevelInfo:
		return slog.LevelDebug
	}
	return l
}

// Enabled implements slog.Handler.
func (s *scrubHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return s.h.Enabled(ctx, s.level(l))
}

// Handle implements slog.Handler.
func (s *scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, s.level(r.Level), s.w.scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(s.attr(a))
		return true
	})
	return s.h.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (s *scrubHandler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = s.attr(a)
	}
	return &scrubHandler{h: s.h.WithAttrs(clean), w: s.w, demote: s.demote}
}

// WithGroup implements slog.Handler.
func (s *scrubHandler) WithGroup(name string) slog.Handler {
	return &scrubHandler{h: s.h.WithGroup(name), w: s.w, demote: s.demote}
}

func (s *scrubHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(s.w.clean(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]slog.Attr, len(g))
		for i, ga := range g {
			clean[i] = s.attr(ga)
		}
		a.Value = slog.GroupValue(clean...)
	case slog.KindAny:
		a.Value = slog.StringValue(s.w.clean(fmt.Sprint(v.Any())))
	default:
		a.Value = v
	}
	return a
}
