package sandbox

import (
	"context"
	"maps"
	"slices"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// WriteOp is the kind of a board write.
type WriteOp uint8

// The board writes a script makes.
const (
	SetVar        WriteOp = iota + 1 // Vars[Name] = Value
	DeleteVar                        // delete(Vars, Name)
	SetChannel                       // Channels[Name] = Messages
	AppendChannel                    // Channels[Name] = append(Channels[Name], Messages...)
)

var writeOpNames = [...]string{SetVar: "setVar", DeleteVar: "deleteVar", SetChannel: "setChannel", AppendChannel: "appendChannel"}

func (op WriteOp) String() string {
	if int(op) < len(writeOpNames) && writeOpNames[op] != "" {
		return writeOpNames[op]
	}
	return "unknown"
}

// Write is one board write of a script: plain data, so that it can cross
// a process boundary and be recorded.
type Write struct {
	Op       WriteOp
	Name     string
	Value    any               // SetVar: a JSON-compatible value
	Messages []message.Message // SetChannel, AppendChannel (never empty for AppendChannel)
}

// Writes are a call's board writes, in the order the script made them.
type Writes []Write

// Compact returns the writes that leave any board as ws does, in their
// order, without those a later write undoes: a var's sets and deletes
// before its last, and a channel's writes before its last set. ws is not
// changed.
func (ws Writes) Compact() Writes {
	vars, channels := map[string]bool{}, map[string]bool{} // decided from here on
	keep := make([]bool, len(ws))
	n := 0
	for i := len(ws) - 1; i >= 0; i-- {
		w := ws[i]
		switch w.Op {
		case SetVar, DeleteVar:
			keep[i] = !vars[w.Name]
			vars[w.Name] = true
		case SetChannel:
			keep[i] = !channels[w.Name]
			channels[w.Name] = true
		case AppendChannel:
			keep[i] = !channels[w.Name]
		default:
			keep[i] = true
		}
		if keep[i] {
			n++
		}
	}
	out := make(Writes, 0, n)
	for i, w := range ws {
		if keep[i] {
			out = append(out, w)
		}
	}
	return out
}

// Apply makes the writes on b, in order.
func (ws Writes) Apply(b *agent.Board) {
	for _, w := range ws {
		w.apply(b)
	}
}

// ApplyMeasured makes the writes on b, in order, and returns b's size
// afterwards as BoardJSONBytes measures it, counted write by write from
// start, b's size before (0 when unknown: b is then measured at the first
// write). exact is false when the size could not be counted exactly (a
// value that does not measure): the caller then measures b itself. It
// costs what the writes are, not what the board is.
func (ws Writes) ApplyMeasured(b *agent.Board, start int64) (size int64, exact bool) {
	var m meter
	m.reset(start)
	st := realBoard{b}
	for _, w := range ws {
		switch w.Op {
		case SetVar:
			m.size = m.setVar(st, w.Name, w.Value)
		case DeleteVar:
			m.size = m.deleteVar(st, w.Name)
		case SetChannel:
			m.size = m.setChannel(st, w.Name, w.Messages)
		case AppendChannel:
			m.size = m.appendChannel(st, w.Name, w.Messages)
		}
		w.apply(b)
	}
	if len(ws) == 0 && start > 0 {
		return start, true
	}
	return m.exactSize()
}

func (w Write) apply(b *agent.Board) {
	switch w.Op {
	case SetVar:
		if b.Vars == nil {
			b.Vars = map[string]any{}
		}
		b.Vars[w.Name] = w.Value
	case DeleteVar:
		delete(b.Vars, w.Name)
	case SetChannel:
		if b.Channels == nil {
			b.Channels = map[string][]message.Message{}
		}
		b.Channels[w.Name] = w.Messages
	case AppendChannel:
		if len(w.Messages) > 0 {
			b.Append(w.Name, w.Messages...)
		}
	}
}

// BoardView is a call's board as its script sees it: the board the call
// found (Invocation.Board, never written) under the writes the script
// made since. A runner keeps one per call, answers the script's reads
// from it, makes the script's writes through it (each measured first
// against max_board_bytes) and returns Writes in the call's Outcome.
// Reads and sizes are exactly those of Invocation.Board with Writes
// applied. The zero BoardView is an empty board; Reset starts one for a
// call. A BoardView is not safe for concurrent use.
type BoardView struct {
	base agent.Board
	// vars indexes the vars the call wrote once it wrote more than
	// scanWrites of them; until then their last write is found in writes.
	vars   map[string]varSlot
	nVarW  int                          // var writes in writes
	chans  map[string][]message.Message // channels written by the call: their whole value
	nVars  int                          // vars in the view
	nChans int                          // channels in the view
	varsOn bool                         // a var was set: the vars are an object, not null
	chOn   bool                         // likewise the channels
	writes Writes
	meter  meter
}

// varSlot is a var the call wrote: its value, or deleted.
type varSlot struct {
	v       any
	deleted bool
}

// Reset starts v on base, a board of baseBytes as the caller measured it
// (Invocation.BoardBytes), or 0 when unknown: the view measures base at
// its first write then.
func (v *BoardView) Reset(base agent.Board, baseBytes int64) {
	*v = BoardView{base: base, nVars: len(base.Vars), nChans: len(base.Channels)}
	v.meter.reset(baseBytes)
}

// scanWrites is how many var writes a view searches before it indexes
// them: most calls write a var or two, and a map would cost more than it
// saves.
const scanWrites = 8

// Var returns var name and whether it is set.
func (v *BoardView) Var(name string) (any, bool) {
	if s, ok := v.written(name); ok {
		return s.v, !s.deleted
	}
	x, ok := v.base.Vars[name]
	return x, ok
}

// written returns the call's last write of var name, if any.
func (v *BoardView) written(name string) (varSlot, bool) {
	if v.vars != nil {
		s, ok := v.vars[name]
		return s, ok
	}
	for i := len(v.writes) - 1; i >= 0; i-- {
		switch w := &v.writes[i]; {
		case w.Name != name:
		case w.Op == SetVar:
			return varSlot{v: w.Value}, true
		case w.Op == DeleteVar:
			return varSlot{deleted: true}, true
		}
	}
	return varSlot{}, false
}

// Vars returns the vars as the script sees them: the base's own map when
// the call wrote none (read-only), else a new map.
func (v *BoardView) Vars() map[string]any {
	if v.nVarW == 0 {
		return v.base.Vars
	}
	out := maps.Clone(v.base.Vars)
	if out == nil {
		out = make(map[string]any, v.nVarW)
	}
	for _, w := range v.writes { // in order: the last write of a name wins
		switch w.Op {
		case SetVar:
			out[w.Name] = w.Value
		case DeleteVar:
			delete(out, w.Name)
		}
	}
	return out
}

// Channel returns the messages of channel name (read-only).
func (v *BoardView) Channel(name string) []message.Message {
	m, _ := v.lookupChannel(name)
	return m
}

// Writes returns the call's writes so far, in order.
func (v *BoardView) Writes() Writes { return v.writes }

// Size returns the view's size as BoardJSONBytes would measure the board
// with the writes applied, and whether it is exact (it is unless a value
// did not measure, or the view was never measured and made no write).
func (v *BoardView) Size() (int64, bool) { return v.meter.exactSize() }

// Write makes w unless the board would then be larger than max bytes
// (max <= 0: no bound). It returns the size the board has after w, or
// would have had, and whether w was made. An AppendChannel of no
// messages, and a DeleteVar of a var that is not set, change nothing and
// are not recorded.
func (v *BoardView) Write(w Write, max int64) (after int64, ok bool) {
	switch w.Op {
	case SetVar:
		after = v.meter.setVar(v, w.Name, w.Value)
	case DeleteVar:
		after = v.meter.deleteVar(v, w.Name)
	case SetChannel:
		after = v.meter.setChannel(v, w.Name, w.Messages)
	case AppendChannel:
		after = v.meter.appendChannel(v, w.Name, w.Messages)
	default:
		return v.meter.current(v), false
	}
	if max > 0 && after > max {
		return after, false
	}
	v.meter.size = after
	if v.make(w) {
		v.writes = append(v.writes, w)
	}
	return after, true
}

// make changes the view by w and reports whether the board changed.
func (v *BoardView) make(w Write) bool {
	switch w.Op {
	case SetVar:
		if _, had := v.Var(w.Name); !had {
			v.nVars++
		}
		v.varsOn = true
		v.noteVar(w.Name, varSlot{v: w.Value})
	case DeleteVar:
		if _, had := v.Var(w.Name); !had {
			return false
		}
		v.nVars--
		v.noteVar(w.Name, varSlot{deleted: true})
	case SetChannel:
		v.setChan(w.Name, w.Messages)
	case AppendChannel:
		if len(w.Messages) == 0 {
			return false
		}
		old, _ := v.lookupChannel(w.Name)
		v.setChan(w.Name, append(slices.Clip(old), w.Messages...))
	}
	return true
}

// noteVar counts a var write about to be recorded, and keeps the index
// of the written vars once there are more than scanWrites.
func (v *BoardView) noteVar(name string, s varSlot) {
	v.nVarW++
	switch {
	case v.vars != nil:
		v.vars[name] = s
	case v.nVarW > scanWrites:
		v.vars = make(map[string]varSlot, 2*scanWrites)
		for _, w := range v.writes {
			switch w.Op {
			case SetVar:
				v.vars[w.Name] = varSlot{v: w.Value}
			case DeleteVar:
				v.vars[w.Name] = varSlot{deleted: true}
			}
		}
		v.vars[name] = s
	}
}

func (v *BoardView) setChan(name string, msgs []message.Message) {
	if _, had := v.lookupChannel(name); !had {
		v.nChans++
	}
	if v.chans == nil {
		v.chans = make(map[string][]message.Message, 2)
	}
	v.chans[name] = msgs
	v.chOn = true
}

// The view as a boardState, for its meter.

func (v *BoardView) lookupVar(name string) (any, bool) { return v.Var(name) }
func (v *BoardView) lenVars() int                      { return v.nVars }
func (v *BoardView) nullVars() bool                    { return v.base.Vars == nil && !v.varsOn }
func (v *BoardView) lookupChannel(name string) ([]message.Message, bool) {
	if m, ok := v.chans[name]; ok {
		return m, true
	}
	m, ok := v.base.Channels[name]
	return m, ok
}
func (v *BoardView) lenChannels() int   { return v.nChans }
func (v *BoardView) nullChannels() bool { return v.base.Channels == nil && !v.chOn }

// jsonBytes measures the base: the meter measures only before the view's
// first write.
func (v *BoardView) jsonBytes() (int64, error) {
	if len(v.writes) > 0 {
		b := agent.Board{Vars: v.Vars(), Channels: maps.Clone(v.base.Channels)}
		if b.Channels == nil && v.chOn {
			b.Channels = map[string][]message.Message{}
		}
		maps.Copy(b.Channels, v.chans)
		return BoardJSONBytes(&b)
	}
	b := v.base
	return BoardJSONBytes(&b)
}

// InvokeOn is Invoke for a caller that keeps its board in one place: it
// runs inv on rt with b as the board (a nil b is an empty board whose
// writes are dropped) and makes the call's writes on b, those of a call
// that failed too, as the graph engine does.
func InvokeOn(ctx context.Context, rt Runtime, inv Invocation, b *agent.Board) error {
	if b != nil {
		inv.Board = *b
	}
	out, err := rt.Invoke(ctx, inv)
	if b != nil {
		out.Writes.Apply(b)
	}
	return err
}
