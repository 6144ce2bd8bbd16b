package hostabi

import (
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
)

// DefaultGrants returns the capabilities an agent's scripts get when its
// document lists none (agent.Run.Capabilities is nil), sorted: clock, emit,
// interrupt, log and random. The slice is the caller's.
func DefaultGrants() []string {
	return []string{agent.CapClock, agent.CapEmit, agent.CapInterrupt, agent.CapLog, agent.CapRandom}
}

// Granted reports whether run's document grants capability. A nil
// Run.Capabilities grants DefaultGrants; a listed set (even an empty one)
// is exact. A "delegate:<agent>" capability is granted by that exact entry
// or by a plain "delegate" entry.
func Granted(run agent.Run, capability string) bool {
	grants := run.Capabilities
	if grants == nil {
		return isDefaultGrant(capability)
	}
	if slices.Contains(grants, capability) {
		return true
	}
	if target, ok := strings.CutPrefix(capability, agent.CapDelegate+":"); ok && target != "" {
		return slices.Contains(grants, agent.CapDelegate)
	}
	return false
}

// isDefaultGrant reports whether capability is in DefaultGrants, without
// building the list.
func isDefaultGrant(capability string) bool {
	switch capability {
	case agent.CapClock, agent.CapEmit, agent.CapInterrupt, agent.CapLog, agent.CapRandom:
		return true
	}
	return false
}

// grantedFunc reports whether run's document lets a script call f at all.
// For delegate that is any delegation grant ("delegate" or
// "delegate:<agent>"); the target is checked once the arguments name it
// (Dispatcher.permitTarget).
func grantedFunc(run agent.Run, f Func) bool {
	if f.Capability != agent.CapDelegate {
		return Granted(run, f.Capability)
	}
	for _, g := range run.Capabilities {
		if g == agent.CapDelegate || strings.HasPrefix(g, agent.CapDelegate+":") {
			return true
		}
	}
	return false
}

// permitTarget checks that run's document grants delegation to target:
// "delegate" or "delegate:<target>".
func (d *Dispatcher) permitTarget(target string) error {
	if Granted(d.cfg.Run, agent.CapDelegate+":"+target) {
		return nil
	}
	return fault.New(fault.PolicyDenied, "host "+FuncDelegate,
		"capability %q is not granted to node %q (agent %q)", agent.CapDelegate+":"+target, d.cfg.Node, d.cfg.Run.AgentID)
}
