// Package astwalk walks a goja syntax tree by reflection: every node once,
// children before the hooks that look back at them. The source scan
// (jsscan) bounds the tree's depth before it is parsed, so the recursion
// here is bounded too.
package astwalk

import (
	"reflect"

	"github.com/dop251/goja/file"
)

// fileType is the source file every node may point to: never walked.
var fileType = reflect.TypeOf((*file.File)(nil))

// Hooks are called as the walk meets values. Either may be nil; an error
// ends the walk with it.
type Hooks struct {
	// Pointer is called with each non-nil pointer, once, before the walk
	// descends into what it points to.
	Pointer func(p any) error
	// Interface is called with each non-nil interface value after the
	// walk has been through what it holds; it may Set a settable v.
	Interface func(v reflect.Value) error
}

// Walk walks root (a pointer to a syntax tree, such as *ast.Program).
func Walk(root any, h Hooks) error {
	w := walker{h: h, seen: map[any]bool{}}
	return w.walk(reflect.ValueOf(root))
}

type walker struct {
	h    Hooks
	seen map[any]bool
}

func (w *walker) walk(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		if err := w.walk(v.Elem()); err != nil {
			return err
		}
		if w.h.Interface != nil {
			return w.h.Interface(v)
		}
	case reflect.Pointer:
		if v.IsNil() || v.Type() == fileType || w.seen[v.Interface()] {
			return nil
		}
		w.seen[v.Interface()] = true
		if w.h.Pointer != nil {
			if err := w.h.Pointer(v.Interface()); err != nil {
				return err
			}
		}
		return w.walk(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if err := w.walk(v.Field(i)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if err := w.walk(v.Index(i)); err != nil {
				return err
			}
		}
	}
	return nil
}
