package js

import (
	"container/list"
	"sync"
)

// programCache keeps compiled programs by their kind, name and source,
// least recently used first out. A goja.Program is immutable and
// may run in many VMs at once.
type programCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *cacheEntry, most recent at the front
	byKey map[programKey]*list.Element
}

type cacheEntry struct {
	key  programKey
	comp *compiled
}

func newProgramCache(max int) *programCache {
	return &programCache{max: max, order: list.New(), byKey: make(map[programKey]*list.Element)}
}

// The kinds of program a cache key names: the same name and source
// compile differently as a node script, as code for eval or Function, and
// as an expression, so each kind has its own keys.
const (
	keyScript byte = iota + 1
	keyCode
	keyExpr
)

// programKey names a program: its kind, name and source.
type programKey struct {
	kind         byte
	name, source string
}

func cacheKey(kind byte, name, source string) programKey {
	return programKey{kind: kind, name: name, source: source}
}

// get returns the program of key, compiling it with compile on a miss. A
// compile error is not cached.
func (c *programCache) get(key programKey, compile func() (*compiled, error)) (*compiled, error) {
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		if c.order.Front() != el {
			c.order.MoveToFront(el)
		}
		p := el.Value.(*cacheEntry).comp
		c.mu.Unlock()
		return p, nil
	}
	c.mu.Unlock()
	p, err := compile()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*cacheEntry).comp, nil
	}
	c.byKey[key] = c.order.PushFront(&cacheEntry{key: key, comp: p})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cacheEntry).key)
	}
	return p, nil
}

// len returns how many programs are cached.
func (c *programCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
