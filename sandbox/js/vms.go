package js

import (
	"container/list"
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/dop251/goja"
)

// maxSpares is how many prepared VMs a runtime keeps ready at most.
const maxSpares = 8

// exprVMUses is how many expressions one pooled expression VM evaluates
// before it is replaced.
const exprVMUses = 1000

// prepare builds a VM with everything of a call that does not depend on
// the invocation: the captured intrinsics, the guarded built-ins and UTC
// dates. The call's limits, node and context are set by bind.
func (r *Runtime) prepare() (*call, error) {
	vm := goja.New()
	c := &call{vm: vm, rt: r}
	c.in = captureIntrinsics(vm)
	if ex := vm.Try(func() {
		c.installGuards()
		c.installUTCDates()
	}); ex != nil {
		return nil, fault.Wrap(fault.Internal, ex, "prepare js vm", "")
	}
	return c, nil
}

// bind readies a prepared call for one invocation or evaluation.
func (c *call) bind(parent context.Context, op, node string, limits sandbox.Limits) {
	c.vm.SetMaxCallStackSize(limits.StackDepth)
	c.ctx, c.cancel = context.WithTimeout(parent, limits.WallTime)
	c.op, c.node, c.limits = op, node, limits
	c.boardBytes, c.boardSized = 0, false
}

// fresh returns a prepared VM that no call has used: a spare when one is
// ready, else one made now.
func (r *Runtime) fresh() (*call, error) {
	select {
	case c := <-r.spares:
		return c, nil
	default:
		return r.prepare()
	}
}

// fill keeps the spares full until the runtime closes: VMs are prepared
// ahead of the calls that will use them, each used once. It runs on its
// own goroutine, started by New; Close waits for it.
func (r *Runtime) fill() {
	defer close(r.filled)
	for {
		select {
		case <-r.closing:
			return
		default:
		}
		c, err := r.prepare()
		if err != nil {
			return
		}
		select {
		case r.spares <- c:
		case <-r.closing:
			return
		}
	}
}

// exprVM is a pooled VM for expressions. Its intrinsics (every object
// reachable from its global object) are frozen, so an expression cannot
// change what the next one sees; each expression gets a new, empty global
// object whose prototype is the frozen one, its own globalThis, and the
// expression's vars as its own properties. A VM is dropped after an
// expression that failed, was stopped or ran code through eval or
// Function, and after exprVMUses expressions.
type exprVM struct {
	c        *call
	template *goja.Object
	uses     int
}

func (r *Runtime) exprVM() (*exprVM, error) {
	select {
	case e := <-r.exprVMs:
		return e, nil
	default:
	}
	c, err := r.prepare()
	if err != nil {
		return nil, err
	}
	e := &exprVM{c: c, template: c.vm.GlobalObject()}
	// An expression has no host: no clock, no randomness, so that a
	// condition gives the same answer on replay.
	c.vm.SetTimeSource(func() time.Time {
		panic(c.vm.NewTypeError("an expression has no clock: read the time from a board var"))
	})
	c.vm.SetRandSource(func() float64 {
		panic(c.vm.NewTypeError("an expression has no random source"))
	})
	if ex := c.vm.Try(func() { c.deepFreezeAll(e.template) }); ex != nil {
		return nil, fault.Wrap(fault.Internal, ex, "prepare expression vm", "")
	}
	return e, nil
}

// release returns e to the pool when it may be used again.
func (r *Runtime) release(e *exprVM, ok bool) {
	e.uses++
	if !ok || e.uses >= exprVMUses {
		return
	}
	c := e.c
	c.reason, c.ended, c.hostErrors, c.joining = nil, false, nil, nil
	c.ctx, c.cancel = nil, nil
	select {
	case r.exprVMs <- e:
	default:
	}
}

// deepFreezeAll freezes every object reachable from root through own
// properties (values, getters and setters) and prototypes.
func (c *call) deepFreezeAll(root *goja.Object) {
	seen := map[*goja.Object]bool{}
	queue := []*goja.Object{root}
	for len(queue) > 0 {
		o := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if o == nil || seen[o] {
			continue
		}
		seen[o] = true
		keys := make([]goja.Value, 0, 16)
		for _, k := range o.GetOwnPropertyNames() {
			keys = append(keys, c.vm.ToValue(k))
		}
		for _, s := range o.Symbols() {
			keys = append(keys, s)
		}
		for _, k := range keys {
			d, err := c.in.descriptor(goja.Undefined(), o, k)
			if err != nil {
				continue
			}
			if dobj, ok := d.(*goja.Object); ok {
				for _, part := range []string{"value", "get", "set"} {
					if v, ok := dobj.Get(part).(*goja.Object); ok {
						queue = append(queue, v)
					}
				}
			}
		}
		queue = append(queue, o.Prototype())
		c.freeze(o)
	}
}

// programCache keeps compiled programs by the hash of their kind, name
// and source, least recently used first out. A goja.Program is immutable and
// may run in many VMs at once.
type programCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *cacheEntry, most recent at the front
	byKey map[[32]byte]*list.Element
}

type cacheEntry struct {
	key  [32]byte
	comp *compiled
}

func newProgramCache(max int) *programCache {
	return &programCache{max: max, order: list.New(), byKey: make(map[[32]byte]*list.Element)}
}

// The kinds of program a cache key names: the same name and source
// compile differently as a node script, as code for eval or Function, and
// as an expression, so each kind has its own keys.
const (
	keyScript byte = iota + 1
	keyCode
	keyExpr
)

func cacheKey(kind byte, name, source string) [32]byte {
	h := sha256.New()
	h.Write([]byte{kind})
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(source))
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// get returns the program of key, compiling it with compile on a miss. A
// compile error is not cached.
func (c *programCache) get(key [32]byte, compile func() (*compiled, error)) (*compiled, error) {
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
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
