// Package schedules holds the schedule tools (schedule_create_cron, schedule_create_window,
// schedule_list, schedule_pause, schedule_resume, schedule_delete) and the Scheduler that fires
// due schedules as schedule-triggered runs, once each across every orchestrator on the database.
package schedules

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// Text limits of a schedule.
const (
	MaxDescriptionChars = 400
	MaxInstructionChars = 2000
)

// Store is what the schedule tools and the scheduler need (postgres.Store implements it).
type Store interface {
	CreateSchedule(ctx context.Context, sc orchestrator.Schedule) (orchestrator.Schedule, error)
	ListSchedules(ctx context.Context, agentID string) ([]orchestrator.Schedule, error)
	GetSchedule(ctx context.Context, agentID, id string) (orchestrator.Schedule, error)
	SetScheduleStatus(ctx context.Context, agentID, id, status string, next *time.Time, at time.Time) (orchestrator.Schedule, error)
	DeleteSchedule(ctx context.Context, agentID, id string) error
	ClaimDue(ctx context.Context, now time.Time, limit int, next orchestrator.NextWakeFunc) (advanced, claimed, skipped int, err error)
	StartWakeups(ctx context.Context, now time.Time, limit int, start orchestrator.StartWakeupFunc, final func(error) bool) (taken, started int, err error)
}

// Tools serves the six schedule tools.
type Tools struct {
	Store Store
	Now   func() time.Time // clock; nil means time.Now
	Rand  *rand.Rand       // seeds of window draws; nil means a random source
}

func (t *Tools) now() time.Time {
	if t.Now != nil {
		return t.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

// NextAfter returns a schedule's first wake-up strictly after t, or nil when it has none.
func NextAfter(sc orchestrator.Schedule, t time.Time) (*time.Time, error) {
	switch sc.Kind {
	case orchestrator.ScheduleCron:
		c, err := ParseCron(sc.Cron)
		if err != nil {
			return nil, err
		}
		n, ok := c.Next(t)
		if !ok {
			return nil, nil
		}
		return &n, nil
	case orchestrator.ScheduleWindow:
		w, err := NewWindow(sc.Timezone, sc.Start, sc.End, sc.MaxWakes, uint64(sc.Seed))
		if err != nil {
			return nil, err
		}
		n := w.Next(t)
		return &n, nil
	}
	return nil, fmt.Errorf("schedule %s has unknown kind %q", sc.ID, sc.Kind)
}

// Register adds the six schedule tools to reg, in the schedules family.
func (t *Tools) Register(reg *registry.Registry) error {
	for _, tool := range []registry.Tool{
		{Name: "schedule_create_cron", Description: "Wake yourself up on a cron schedule: five fields (minute hour day month weekday), in UTC; consecutive wake-ups must be at least 5 minutes apart. Each wake-up starts a run carrying instruction.",
			Schema: json.RawMessage(cronSchema), Handler: t.createCron, Transactional: true},
		{Name: "schedule_create_window", Description: "Wake yourself up max_wakes times a day at random times between start and end (local HH:MM in timezone), at least 5 minutes apart. Each wake-up starts a run carrying instruction.",
			Schema: json.RawMessage(windowSchema), Handler: t.createWindow, Transactional: true},
		{Name: "schedule_list", Description: "List your schedules with their state and next wake-up.", Schema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`), Handler: t.list},
		{Name: "schedule_pause", Description: "Pause one of your schedules: it stops firing until resumed.", Schema: json.RawMessage(idSchema), Handler: t.pause, Transactional: true},
		{Name: "schedule_resume", Description: "Resume a paused schedule; its next wake-up is computed from now.", Schema: json.RawMessage(idSchema), Handler: t.resume, Transactional: true},
		{Name: "schedule_delete", Description: "Delete one of your schedules.", Schema: json.RawMessage(idSchema), Handler: t.delete, Transactional: true},
	} {
		tool.Family = orchestrator.FamilySchedules
		if err := reg.Register(tool); err != nil {
			return fmt.Errorf("register schedule tools: %w", err)
		}
	}
	return nil
}

const textProps = `"description":{"type":"string","description":"one-line label, at most 400 characters"},
"instruction":{"type":"string","description":"what to do when you wake up, markdown, at most 2000 characters"}`

const cronSchema = `{"type":"object","properties":{
"cron":{"type":"string","description":"five fields, UTC, e.g. \"0 9 * * 1-5\""},` + textProps + `},
"required":["cron","description"],"additionalProperties":false}`

const windowSchema = `{"type":"object","properties":{
"timezone":{"type":"string","description":"IANA timezone, e.g. Europe/Paris"},
"start":{"type":"string","description":"local HH:MM the window opens"},
"end":{"type":"string","description":"local HH:MM the window closes, after start"},
"max_wakes":{"type":"integer","minimum":1,"maximum":48,"description":"wake-ups per day"},` + textProps + `},
"required":["timezone","start","end","max_wakes","description"],"additionalProperties":false}`

const idSchema = `{"type":"object","properties":{"id":{"type":"string","description":"schedule id from schedule_list"}},"required":["id"],"additionalProperties":false}`

// texts checks and trims description and instruction.
func texts(desc, instr string) (string, string, error) {
	d := strings.TrimSpace(desc)
	switch {
	case d == "":
		return "", "", orchestrator.Errorf(orchestrator.EINVALID, "description is empty; give the schedule a one-line label")
	case strings.ContainsAny(d, "\r\n"):
		return "", "", orchestrator.Errorf(orchestrator.EINVALID, "description must be one line; put details in instruction")
	case utf8.RuneCountInString(d) > MaxDescriptionChars:
		return "", "", orchestrator.Errorf(orchestrator.EINVALID, "description is %d characters; at most %d", utf8.RuneCountInString(d), MaxDescriptionChars)
	case utf8.RuneCountInString(instr) > MaxInstructionChars:
		return "", "", orchestrator.Errorf(orchestrator.EINVALID, "instruction is %d characters; at most %d: keep the details in a note and point to it", utf8.RuneCountInString(instr), MaxInstructionChars)
	case !utf8.ValidString(d) || !utf8.ValidString(instr):
		return "", "", orchestrator.Errorf(orchestrator.EINVALID, "description and instruction must be UTF-8 text")
	}
	return d, strings.TrimSpace(instr), nil
}

func (t *Tools) createCron(ctx context.Context, c *registry.Call) (string, error) {
	var in struct{ Cron, Description, Instruction string }
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("schedule_create_cron arguments: %w", err)
	}
	d, instr, err := texts(in.Description, in.Instruction)
	if err != nil {
		return "", err
	}
	cr, err := ParseCron(in.Cron)
	if err != nil {
		return "", orchestrator.Errorf(orchestrator.EINVALID, "%v", err)
	}
	now := t.now()
	if err := cr.CheckSpacing(now); err != nil {
		return "", orchestrator.Errorf(orchestrator.EINVALID, "%v", err)
	}
	next, _ := cr.Next(now)
	return t.create(ctx, c, orchestrator.Schedule{Kind: orchestrator.ScheduleCron, Cron: cr.String(), Description: d, Instruction: instr, NextRunAt: &next}, now)
}

func (t *Tools) createWindow(ctx context.Context, c *registry.Call) (string, error) {
	var in struct {
		Timezone, Start, End, Description, Instruction string
		MaxWakes                                       int `json:"max_wakes"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("schedule_create_window arguments: %w", err)
	}
	d, instr, err := texts(in.Description, in.Instruction)
	if err != nil {
		return "", err
	}
	var seed uint64
	if t.Rand != nil {
		seed = t.Rand.Uint64()
	} else {
		seed = rand.Uint64()
	}
	seed &= 1<<63 - 1 // stored as bigint
	w, err := NewWindow(in.Timezone, in.Start, in.End, in.MaxWakes, seed)
	if err != nil {
		return "", orchestrator.Errorf(orchestrator.EINVALID, "%v", err)
	}
	now := t.now()
	next := w.Next(now)
	return t.create(ctx, c, orchestrator.Schedule{Kind: orchestrator.ScheduleWindow, Timezone: w.Loc.String(), Start: in.Start, End: in.End,
		MaxWakes: in.MaxWakes, Seed: int64(seed), Description: d, Instruction: instr, NextRunAt: &next}, now)
}

func (t *Tools) create(ctx context.Context, c *registry.Call, sc orchestrator.Schedule, now time.Time) (string, error) {
	sc.ID = orchestrator.NewID(orchestrator.PrefixSchedule)
	sc.AgentID = c.AgentID
	sc.CreatedAt = now
	out, err := t.Store.CreateSchedule(ctx, sc)
	if err != nil {
		return "", err
	}
	c.Meta["schedule_id"] = out.ID
	return "created " + line(out), nil
}

// line is one schedule as the tools show it.
func line(sc orchestrator.Schedule) string {
	when := "cron " + sc.Cron + " UTC"
	if sc.Kind == orchestrator.ScheduleWindow {
		when = fmt.Sprintf("window %s-%s %s, %d wake-ups a day", sc.Start, sc.End, sc.Timezone, sc.MaxWakes)
	}
	next := "none"
	if sc.Status == orchestrator.SchedulePaused {
		next = "paused"
	} else if sc.NextRunAt != nil {
		next = sc.NextRunAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	return fmt.Sprintf("%s [%s] %s; next: %s; %s", sc.ID, sc.Status, when, next, sc.Description)
}

func (t *Tools) list(ctx context.Context, c *registry.Call) (string, error) {
	all, err := t.Store.ListSchedules(ctx, c.AgentID)
	if err != nil {
		return "", err
	}
	if len(all) == 0 {
		return "no schedules; create one with schedule_create_cron or schedule_create_window", nil
	}
	var b strings.Builder
	for _, sc := range all {
		b.WriteString(line(sc))
		b.WriteString("\n")
	}
	return b.String(), nil
}

func scheduleID(c *registry.Call, tool string) (string, error) {
	var in struct{ ID string }
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("%s arguments: %w", tool, err)
	}
	if !orchestrator.ValidID(in.ID) {
		return "", orchestrator.Errorf(orchestrator.ENOTFOUND, "schedule %q not found; schedule_list shows your schedule ids", clip(in.ID))
	}
	return in.ID, nil
}

func (t *Tools) pause(ctx context.Context, c *registry.Call) (string, error) {
	id, err := scheduleID(c, "schedule_pause")
	if err != nil {
		return "", err
	}
	if _, err := t.Store.GetSchedule(ctx, c.AgentID, id); err != nil {
		return "", err
	}
	sc, err := t.Store.SetScheduleStatus(ctx, c.AgentID, id, orchestrator.SchedulePaused, nil, t.now())
	if err != nil {
		return "", err
	}
	return "paused " + line(sc), nil
}

func (t *Tools) resume(ctx context.Context, c *registry.Call) (string, error) {
	id, err := scheduleID(c, "schedule_resume")
	if err != nil {
		return "", err
	}
	sc, err := t.Store.GetSchedule(ctx, c.AgentID, id)
	if err != nil {
		return "", err
	}
	now := t.now()
	next, err := NextAfter(sc, now)
	if err != nil {
		return "", err
	}
	sc, err = t.Store.SetScheduleStatus(ctx, c.AgentID, id, orchestrator.ScheduleActive, next, now)
	if err != nil {
		return "", err
	}
	return "resumed " + line(sc), nil
}

func (t *Tools) delete(ctx context.Context, c *registry.Call) (string, error) {
	id, err := scheduleID(c, "schedule_delete")
	if err != nil {
		return "", err
	}
	if err := t.Store.DeleteSchedule(ctx, c.AgentID, id); err != nil {
		return "", err
	}
	return "deleted schedule " + id, nil
}
