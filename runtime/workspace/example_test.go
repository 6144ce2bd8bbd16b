package workspace_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/workspace"
)

func ExampleLocal() {
	dir, err := os.MkdirTemp("", "workspace-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	ws, err := workspace.NewLocal(dir)
	if err != nil {
		panic(err)
	}
	defer ws.Close()

	ctx := context.Background()
	_ = ws.Write(ctx, "notes/today.txt", []byte("feed the horses"))
	data, _ := ws.Read(ctx, "notes/today.txt")
	fmt.Println(string(data))

	names, _ := ws.List(ctx, "")
	fmt.Println(names)

	_, err = ws.Read(ctx, "../etc/passwd")
	fmt.Println(errors.Is(err, fault.Forbidden), err)

	_, err = ws.Read(ctx, "notes/tomorrow.txt")
	fmt.Println(errors.Is(err, fault.NotFound))
	// Output:
	// feed the horses
	// [notes/]
	// true workspace read: "../etc/passwd": path escapes the workspace root
	// true
}
