package js

import (
	"github.com/corral-rt/corral/fault"
	"github.com/dop251/goja"
)

// Floor is a benchmark baseline: one goja VM, made once, holding one
// small script function. Calling it n times costs what n node scripts
// would cost with no fresh VM, no guards, no globals and no host ABI: the
// floor that benchmarks of script nodes (and of chains of them) compare
// their cost with. A Floor is not safe for concurrent use.
type Floor struct {
	step  goja.Callable
	board goja.Value
}

// NewFloor makes the VM, its function and the object the function counts
// in.
func NewFloor() (*Floor, error) {
	vm := goja.New()
	v, err := vm.RunString(`(function step(board) { board.n = (board.n || 0) + 1; return board.n })`)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "new floor", "")
	}
	step, ok := goja.AssertFunction(v)
	if !ok {
		return nil, fault.New(fault.Internal, "new floor", "the step is not a function")
	}
	return &Floor{step: step, board: vm.NewObject()}, nil
}

// Call calls the function n times and returns the count it reached.
func (f *Floor) Call(n int) (int64, error) {
	var last goja.Value
	for range n {
		v, err := f.step(goja.Undefined(), f.board)
		if err != nil {
			return 0, fault.Wrap(fault.Internal, err, "floor", "")
		}
		last = v
	}
	if last == nil {
		return 0, nil
	}
	return last.ToInteger(), nil
}
