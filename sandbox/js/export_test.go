package js

// StopWatchdogTicks ends the watchdog goroutine of rt, as a starved
// machine holds it up: only the looks that calls take themselves remain.
// rt's Close still works.
func StopWatchdogTicks(rt *Runtime) { rt.watchdog.shutdown() }
