package agent

import (
	"strings"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
)

// Capability names that an agent's document may grant to its scripts (the
// agent's capabilities: list). A host ABI function is callable only when the
// document grants its capability and the turn's Host provides it.
const (
	CapSteer     = "steer"     // drain the turn's steer queue
	CapPublish   = "publish"   // publish events under the run's own namespace
	CapEmit      = "emit"      // emit stream deltas to the turn's sinks
	CapInterrupt = "interrupt" // poll for an interrupt
	CapAskUser   = "ask_user"  // ask the user and wait for the reply
	CapUsage     = "usage"     // report token usage
	CapDelegate  = "delegate"  // delegate to any agent; "delegate:<id>" grants one target
	CapClock     = "clock"     // read the host's deterministic clock
	CapRandom    = "random"    // read the host's seeded random source
	CapLog       = "log"       // write to the host log
)

// CapabilityNames lists every capability name, sorted.
func CapabilityNames() []string {
	return []string{CapAskUser, CapClock, CapDelegate, CapEmit, CapInterrupt, CapLog, CapPublish, CapRandom, CapSteer, CapUsage}
}

// ValidateCapabilityName checks one entry of a capabilities list: a known
// name (exactly as spelled in CapabilityNames), or "delegate:<agent id>"
// where the id is non-blank, valid UTF-8 and has no surrounding whitespace.
// The error is of kind Validation.
func ValidateCapabilityName(name string) error {
	if target, ok := strings.CutPrefix(name, CapDelegate+":"); ok {
		if strings.TrimSpace(target) == "" || strings.TrimSpace(target) != target || !utf8.ValidString(target) {
			return fault.New(fault.Validation, "agent", "capabilities: %q names no delegation target", name)
		}
		return nil
	}
	for _, c := range CapabilityNames() {
		if c == name {
			return nil
		}
	}
	return fault.New(fault.Validation, "agent", "capabilities: unknown capability %q (known: %s, or delegate:<agent>)",
		name, strings.Join(CapabilityNames(), ", "))
}
