package graph

import (
	"maps"
	"reflect"
	"slices"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// varChange is a branch's write of one var relative to the pre-fork
// board: a new value, or a deletion.
type varChange struct {
	key     string
	value   any
	deleted bool
}

// channelChange is what a branch did to one channel: appended messages
// after the pre-fork ones, or replaced the channel (removed it when the
// branch no longer has it).
type channelChange struct {
	appended []message.Message
	replaced bool
	removed  bool
	value    []message.Message // the replacement
}

// merge folds the accepted branches into the run's board (REF
// 5.6.6): var changes relative to the pre-fork board under the merge
// strategy, and new channel messages appended in wave order. A branch that
// rewrote a channel (not a pure append) replaces it under the merge
// strategy, and the other branches' appends follow.
func (r *runState) merge(f *fork) {
	first := r.e.opts.Parallel.MergeStrategy == FirstWriteWins
	pre := r.board
	var varChanges [][]varChange
	var chanChanges []map[string]channelChange
	for _, b := range f.branches {
		if !b.cancelled {
			varChanges = append(varChanges, diffVars(pre.Vars, b.board.Vars))
			chanChanges = append(chanChanges, diffChannels(pre.Channels, b.board.Channels))
		}
	}
	written := map[string]bool{}
	for _, changes := range varChanges {
		for _, c := range changes {
			if first && written[c.key] {
				continue
			}
			written[c.key] = true
			if c.deleted {
				delete(pre.Vars, c.key)
			} else {
				pre.Vars[c.key] = c.value
			}
		}
	}
	applyChannels(pre, chanChanges, first)
}

// mergeAssistant appends, for the record, the assistant messages every
// branch appended to its channels, in wave order (an interrupted wave is
// not merged otherwise).
func (r *runState) mergeAssistant(f *fork) {
	for _, b := range f.branches {
		changes := diffChannels(r.board.Channels, b.board.Channels)
		for _, name := range slices.Sorted(maps.Keys(changes)) {
			for _, m := range changes[name].appended {
				if m.Role == message.RoleAssistant {
					r.board.Append(name, m)
				}
			}
		}
	}
}

// diffVars lists post's changes relative to pre, by key.
func diffVars(pre, post map[string]any) []varChange {
	var out []varChange
	for _, k := range slices.Sorted(maps.Keys(post)) {
		if v, ok := pre[k]; !ok || !reflect.DeepEqual(v, post[k]) {
			out = append(out, varChange{key: k, value: post[k]})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(pre)) {
		if _, ok := post[k]; !ok {
			out = append(out, varChange{key: k, deleted: true})
		}
	}
	return out
}

// diffChannels tells, per changed channel, what post did relative to pre.
func diffChannels(pre, post map[string][]message.Message) map[string]channelChange {
	out := map[string]channelChange{}
	for name, msgs := range post {
		old := pre[name]
		if len(msgs) >= len(old) && reflect.DeepEqual(normal(old), normal(msgs[:len(old)])) {
			if len(msgs) > len(old) {
				out[name] = channelChange{appended: msgs[len(old):]}
			}
			continue
		}
		out[name] = channelChange{replaced: true, value: msgs}
	}
	for name := range pre {
		if _, ok := post[name]; !ok {
			out[name] = channelChange{replaced: true, removed: true}
		}
	}
	return out
}

// normal makes an empty slice compare equal to nil.
func normal(msgs []message.Message) []message.Message {
	if len(msgs) == 0 {
		return nil
	}
	return msgs
}

// applyChannels applies the branches' channel changes to board: the
// replacement the merge strategy picks, then every append in wave order.
func applyChannels(board *agent.Board, changes []map[string]channelChange, first bool) {
	names := map[string]bool{}
	for _, m := range changes {
		for name := range m {
			names[name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		msgs, present := board.Channels[name]
		replaced := false
		for _, m := range changes {
			c, ok := m[name]
			if !ok || !c.replaced || (first && replaced) {
				continue
			}
			replaced, msgs, present = true, c.value, !c.removed
		}
		for _, m := range changes {
			if c, ok := m[name]; ok && !c.replaced {
				msgs, present = append(msgs, c.appended...), true
			}
		}
		if present {
			board.Channels[name] = msgs
		} else {
			delete(board.Channels, name)
		}
	}
}
