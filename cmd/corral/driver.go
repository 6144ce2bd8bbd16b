package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// steerPrefix starts a line that steers the turn whatever else is
// pending: "/steer keep it short".
const steerPrefix = "/steer"

// driver feeds a running turn: stdin lines become steer messages or
// answers to the prompts, interrupt signals interrupt and then cancel the
// turn. Its fields belong to the drive loop.
//
// Which line is which (docs/cli.md, "stdin: steering and answering"): a
// line that starts with /steer steers. Any other line answers the oldest
// question waiting for one. When no question waits, a line typed on a
// terminal steers, and a line from a pipe or a file waits for the next
// question, however early it arrived.
type driver struct {
	turn     *session.Turn
	con      *console
	lines    *lineReader
	events   <-chan promptEvent
	signals  <-chan os.Signal
	terminal bool // stdin is a terminal (stdio.terminal)

	input   <-chan string // lines.Lines(), nil once stdin has ended
	pending []string      // the prompts shown and not yet answered, oldest first
	waiting []string      // lines from a pipe that wait for a question, oldest first
	eof     bool          // stdin has ended: prompts get an empty answer
	intrs   int           // interrupt signals received
}

// drive runs until the turn settles. It reports whether the turn was
// canceled because it ran past timeout (0: no timeout).
func (d *driver) drive(ctx context.Context, timeout time.Duration) (timedOut bool) {
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	d.input = d.lines.Lines()
	for {
		select {
		case <-d.turn.Done():
			return timedOut
		case line, ok := <-d.input:
			if !ok {
				d.endOfInput()
				continue
			}
			d.onLine(ctx, line)
		case ev := <-d.events:
			d.onPrompt(ctx, ev)
		case sig := <-d.signals:
			d.onSignal(sig)
		case <-deadline:
			timedOut = true
			d.con.notice("corral: the turn ran past --timeout %s: canceling", timeout)
			d.turn.Cancel()
		case <-ctx.Done():
			d.turn.Cancel()
			return timedOut
		}
	}
}

// onLine steers a /steer line, answers the oldest prompt on screen with
// any other, and else steers (a terminal) or keeps the line for the next
// prompt (a pipe).
func (d *driver) onLine(ctx context.Context, line string) {
	if text, ok := steerText(line); ok {
		d.steer(text)
		return
	}
	switch {
	case len(d.pending) > 0:
		id := d.pending[0]
		d.pending = d.pending[1:]
		d.con.answered(line)
		d.reply(ctx, id, line)
	case d.terminal:
		d.steer(line)
	default:
		d.waiting = append(d.waiting, line)
	}
}

// steerText is the text a /steer line steers.
func steerText(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, steerPrefix)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// steer sends a steer message; an empty line steers nothing.
func (d *driver) steer(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	if err := d.turn.Steer(message.NewTextMessage(message.RoleUser, line)); err != nil {
		d.con.notice("corral: steer not delivered: %v", err)
		return
	}
	d.con.notice("corral: steered: %q", line)
}

// onPrompt shows a prompt (after handling every line read before it
// appeared) and answers it with the oldest line waiting for one, or
// forgets a prompt that was resolved.
func (d *driver) onPrompt(ctx context.Context, ev promptEvent) {
	if ev.resolved {
		d.pending = slices.DeleteFunc(d.pending, func(id string) bool { return id == ev.id })
		return
	}
	d.takeTypedAhead(ctx)
	d.con.ask(ev.text)
	if len(d.waiting) > 0 {
		line := d.waiting[0]
		d.waiting = d.waiting[1:]
		d.con.answered(line)
		d.reply(ctx, ev.id, line)
		return
	}
	if d.eof {
		d.con.noInput()
		d.reply(ctx, ev.id, "")
		return
	}
	d.pending = append(d.pending, ev.id)
}

// takeTypedAhead handles the lines already read when a prompt arrives:
// they were typed before it was on screen.
func (d *driver) takeTypedAhead(ctx context.Context) {
	for d.input != nil {
		select {
		case line, ok := <-d.input:
			if !ok {
				d.endOfInput()
				return
			}
			d.onLine(ctx, line)
		default:
			return
		}
	}
}

func (d *driver) reply(ctx context.Context, id, text string) {
	reply := agent.UserReply{Parts: []message.Part{}}
	if text != "" {
		reply.Parts = append(reply.Parts, message.TextPart(text))
	}
	if err := d.turn.Reply(ctx, id, reply); err != nil {
		d.con.notice("corral: answer not delivered: %v", err)
	}
}

// endOfInput answers every prompt on screen, and every later one, with an
// empty answer.
func (d *driver) endOfInput() {
	d.input, d.eof = nil, true
	if err := d.lines.Err(); err != nil {
		d.con.notice("corral: stdin: %v", err)
	}
	pending := d.pending
	d.pending = nil
	for _, id := range pending {
		d.con.noInput()
		d.reply(context.Background(), id, "")
	}
}

// reportUnused tells of the lines from a pipe that no question took.
func (d *driver) reportUnused() {
	if n := len(d.waiting); n > 0 {
		d.con.notice("corral: %d line(s) of input not used: no question took them (%q steers a line)", n, steerPrefix+" TEXT")
	}
}

// onSignal interrupts the turn on the first interrupt signal and cancels
// it on the second. A terminate signal (SIGTERM: a supervisor stopping
// the command) interrupts and cancels it at once, so that the turn ends
// now and its outcome is still printed.
func (d *driver) onSignal(sig os.Signal) {
	if sig == syscall.SIGTERM {
		d.con.notice("corral: terminated: interrupting and canceling the turn")
		_ = d.turn.Interrupt(agent.Interrupt{Cause: agent.CauseHostShutdown, Detail: "terminate signal"})
		d.turn.Cancel()
		return
	}
	d.intrs++
	if d.intrs == 1 {
		d.con.notice("corral: interrupting the turn (Ctrl-C again to cancel it)")
		_ = d.turn.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "interrupt signal"})
		return
	}
	if d.intrs == 2 {
		d.con.notice("corral: canceling the turn")
		d.turn.Cancel()
	}
}
