package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/resource"
)

// exampleRegistry registers two small factories: a bus, and a store that
// needs one and decodes its settings strictly.
func exampleRegistry() *resource.Registry {
	reg := resource.NewRegistry()
	reg.MustRegister(
		resource.FactoryFunc(resource.Spec{Kind: "example.Bus", Impl: "memory"},
			func(_ context.Context, in resource.Input) (any, error) {
				return "bus " + in.Name, nil
			}),
		resource.FactoryFunc(resource.Spec{Kind: "example.Store", Impl: "memory",
			Deps: []resource.DepSpec{{Name: "bus", Type: "example.Bus", Required: true}}},
			func(_ context.Context, in resource.Input) (any, error) {
				s, err := resource.DecodeTyped[struct {
					Prefix string `json:"prefix"`
				}](in.Settings)
				if err != nil {
					return nil, err
				}
				bus, _ := in.Dep("bus")
				return fmt.Sprintf("store %s (prefix %q, on %v)", in.Name, s.Prefix, bus), nil
			}),
	)
	return reg
}

func Example() {
	doc, err := deploy.ParseWithConfig([]byte(`
version: v1
resources:
  store:
    kind: example.Store
    impl: memory
    deps: {bus: events}
    settings: {prefix: data}
  events:
    kind: example.Bus
    impl: memory
`), deploy.ParseConfig{Filename: "example.yaml"})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := deploy.Deploy(context.Background(), doc, deploy.Options{Registry: exampleRegistry()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Close()
	fmt.Println("names:", res.Names())
	fmt.Println("build order:", res.Order())
	store, _ := res.Value("store")
	fmt.Println(store)
	// Output:
	// names: [events store]
	// build order: [events store]
	// store store (prefix "data", on bus events)
}

func ExampleParse_error() {
	_, err := deploy.ParseWithConfig([]byte(`
version: v1
agents:
  qa:
    card: {name: QA}
    deps: {bus: events}
`), deploy.ParseConfig{Filename: "deploy.yaml"})
	fmt.Println(fault.KindOf(err))
	fmt.Println(err)
	var de *deploy.Error
	if errors.As(err, &de) {
		fmt.Println(de.Pos.Line, de.Path)
	}
	// Output:
	// validation
	// deploy.yaml:6: agents.qa: unknown field "deps" (engine dependencies go under engine.deps)
	// 6 agents.qa
}

func ExampleDeploy_cycle() {
	doc, _ := deploy.ParseWithConfig([]byte(`
version: v1
resources:
  a: {kind: example.Store, impl: memory, deps: {bus: b}}
  b: {kind: example.Store, impl: memory, deps: {bus: a}}
`), deploy.ParseConfig{Filename: "deploy.yaml"})
	_, err := deploy.Deploy(context.Background(), doc, deploy.Options{Registry: exampleRegistry()})
	fmt.Println(err)
	// Output:
	// deploy.yaml:4: resources.a: dependency cycle: a -> b -> a
}

func ExampleNewLoader() {
	l := deploy.NewLoader(deploy.LoaderConfig{
		BaseDir:   "/srv/app",
		Home:      "/home/ada",
		LookupEnv: func(name string) (string, bool) { return "secret-" + name, name == "TOKEN" },
	})
	for _, s := range []string{"${env:TOKEN}", "${base:data/app.db}", "~/notes", "literal $${env:TOKEN}", "${env:MISSING}"} {
		out, err := l.Expand(s)
		if err != nil {
			fmt.Println(fault.KindOf(err), err)
			continue
		}
		fmt.Println(out)
	}
	// Output:
	// secret-TOKEN
	// /srv/app/data/app.db
	// /home/ada/notes
	// literal ${env:TOKEN}
	// validation expand: environment variable "MISSING" is not set
}

func ExampleLoadLayers() {
	base := []byte(`
version: v1
resources:
  store: {kind: example.Store, impl: memory, deps: {bus: events}, settings: {prefix: dev}}
  events: {kind: example.Bus, impl: memory}
`)
	prod := []byte(`
resources:
  store: {settings: {prefix: prod}}
`)
	doc, prov, err := deploy.LoadLayers([]deploy.Layer{
		{Name: "base", Priority: 0, Data: base, File: "base.yaml"},
		{Name: "prod", Priority: 10, Data: prod, File: "prod.yaml"},
	}, deploy.ParseConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(doc.Resources["store"].Settings))
	fmt.Println(prov["resources.store.settings.prefix"], prov["resources.store.kind"])
	pos, _ := doc.Pos("resources.store.settings.prefix")
	fmt.Println(pos)
	// Output:
	// {"prefix":"prod"}
	// prod base
	// prod.yaml:3
}

// A part the document keeps as JSON decodes with the document's own rules,
// over defaults set before the call, and its errors name the file and line.
func ExampleDecodeSection() {
	type limits struct {
		Every time.Duration `json:"every"`
		Size  int           `json:"size"`
		Depth int           `json:"depth"`
	}
	var section struct {
		Limits limits `json:"limits"`
	}
	section.Limits.Depth = 3 // a default: the document leaves depth out
	doc, _ := deploy.ParseWithConfig([]byte(`
version: v1
runtime:
  limits:
    every: 90s
    size: "16"
`), deploy.ParseConfig{Filename: "deploy.yaml"})
	err := deploy.DecodeSection(doc, "runtime", doc.Runtime, &section)
	fmt.Println(section.Limits, err)

	bad, _ := deploy.ParseWithConfig([]byte(`
version: v1
runtime:
  limits:
    every: 90s
    colour: blue
`), deploy.ParseConfig{Filename: "deploy.yaml"})
	fmt.Println(deploy.DecodeSection(bad, "runtime", bad.Runtime, &section))
	// Output:
	// {1m30s 16 3} <nil>
	// deploy.yaml:6: runtime.limits: unknown field "colour"
}
