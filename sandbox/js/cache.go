package js

import (
	"container/list"
	"sync"
	"unsafe"
)

// programCache keeps compiled programs by their kind, name and source,
// least recently used first out. A goja.Program is immutable and
// may run in many VMs at once.
type programCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *cacheEntry, most recent at the front
	byKey map[programKey]*list.Element
	// byID finds an entry by where its key's strings are, without hashing
	// the source (sourceIdentity); one identity per entry.
	byID map[sourceIdentity]*list.Element
}

type cacheEntry struct {
	key  programKey
	comp *compiled
}

// sourceIdentity is where a key's name and source are: the graph engine
// hands the same strings to every call of a node, which then skips
// hashing its source (a script of a few KiB costs about a microsecond to
// hash and compare). An identity is remembered only for the strings of an
// entry's own key: the entry keeps them alive while it is cached, so no
// other string can take their place. Another copy of the same source is
// found by its hash, as before.
type sourceIdentity struct {
	kind            byte
	name, source    *byte
	nameLen, srcLen int
}

func identityOf(key programKey) sourceIdentity {
	return sourceIdentity{kind: key.kind, name: unsafe.StringData(key.name), source: unsafe.StringData(key.source),
		nameLen: len(key.name), srcLen: len(key.source)}
}

func newProgramCache(max int) *programCache {
	return &programCache{max: max, order: list.New(), byKey: make(map[programKey]*list.Element),
		byID: make(map[sourceIdentity]*list.Element)}
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

// peek returns the program of key, or nil when it is not cached.
func (c *programCache) peek(key programKey) *compiled {
	id := identityOf(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		el, ok = c.byKey[key]
	}
	if !ok {
		return nil
	}
	if c.order.Front() != el {
		c.order.MoveToFront(el)
	}
	return el.Value.(*cacheEntry).comp
}

// get returns the program of key, compiling it with compile on a miss. A
// compile error is not cached.
func (c *programCache) get(key programKey, compile func() (*compiled, error)) (*compiled, error) {
	if p := c.peek(key); p != nil {
		return p, nil
	}
	id := identityOf(key)
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
	el := c.order.PushFront(&cacheEntry{key: key, comp: p})
	c.byKey[key] = el
	c.byID[id] = el
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		e := last.Value.(*cacheEntry)
		delete(c.byKey, e.key)
		delete(c.byID, identityOf(e.key))
	}
	return p, nil
}

// len returns how many programs are cached.
func (c *programCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
