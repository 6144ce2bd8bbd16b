package jsonval_test

import (
	"fmt"
	"math"

	"github.com/corral-rt/corral/internal/jsonval"
)

func Example() {
	vars := map[string]any{
		"title": "<b>fish & chips</b>",
		"count": 3.0,
		"tiny":  1e-7,
		"tags":  []any{"a", nil, true},
	}
	out, ok := jsonval.Append(nil, vars)
	fmt.Println(string(out), ok)
	size, _ := jsonval.Size(vars)
	fmt.Println(size == int64(len(out)))
	_, ok = jsonval.Append(nil, math.NaN()) // json.Marshal fails on NaN
	fmt.Println(ok)
	// Output:
	// {"count":3,"tags":["a",null,true],"tiny":1e-7,"title":"\u003cb\u003efish \u0026 chips\u003c/b\u003e"} true
	// true
	// false
}
