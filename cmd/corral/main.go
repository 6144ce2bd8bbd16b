// Command corral builds and checks Corral deployments.
//
//	corral validate [DOC]
//
// validate parses the deployment document DOC (YAML or JSON), builds every
// resource and agent it declares with the factories Corral ships, prints
// what was built, and closes it again. Without DOC it uses the embedded
// default deployment. The exit code is 0 when the document builds, 2 when
// the document or the command line is wrong (errors name file:line), and 1
// for any other failure.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
