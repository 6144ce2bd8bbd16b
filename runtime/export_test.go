package runtime

import "github.com/corral-rt/corral/runtime/session"

// HostFactoryOf exposes the serving generation's host factory to tests.
func HostFactoryOf(rt *Runtime) session.HostFactory {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return rt.gen.hostFactory
}
