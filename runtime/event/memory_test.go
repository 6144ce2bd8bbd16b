package event_test

import (
	"testing"

	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/event/eventtest"
)

// REF 4.3.1
// REF 4.3.2
// REF 4.3.3
// REF 4.3.4
func TestMemoryBusConformance(t *testing.T) {
	t.Parallel()
	eventtest.RunBusSuite(t, func(t *testing.T) event.Bus { return event.NewMemoryBus() })
}

// REF 4.3.5
func TestMemoryBusConformanceWithoutRouteCache(t *testing.T) {
	t.Parallel()
	eventtest.RunBusSuite(t, func(t *testing.T) event.Bus {
		return event.NewMemoryBusWithConfig(event.BusConfig{RouteCacheSize: -1})
	})
}
