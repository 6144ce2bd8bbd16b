package resource_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
)

// greeter is a value built by a factory.
type greeter struct {
	greeting string
	audience []string
}

func (g *greeter) Close() error { return nil }

// greeterFactory builds a greeter. It takes a required "prefix" dependency
// and any number of "audience.<name>" dependencies, and decodes its
// settings strictly.
type greeterFactory struct{}

func (greeterFactory) Spec() resource.Spec {
	return resource.Spec{Kind: "example.Greeter", Impl: "plain", Deps: []resource.DepSpec{
		{Name: "prefix", Type: "example.Text", Required: true},
		{Name: "audience", Type: "example.Text", Many: true},
	}}
}

func (greeterFactory) New(_ context.Context, in resource.Input) (any, error) {
	s, err := resource.DecodeTyped[struct {
		Punctuation string `json:"punctuation"`
	}](in.Settings)
	if err != nil {
		return nil, err
	}
	prefix, _ := in.Dep("prefix")
	p, err := resource.As[string]("prefix", prefix)
	if err != nil {
		return nil, err
	}
	g := &greeter{greeting: p + s.Punctuation}
	for _, d := range in.DepsMany("audience") {
		g.audience = append(g.audience, d.Suffix()+"="+d.Value.(string))
	}
	return g, nil
}

func Example() {
	reg := resource.NewRegistry()
	reg.MustRegister(greeterFactory{})
	for _, s := range reg.Specs() {
		fmt.Println("registered", s.Key())
	}

	f, _ := reg.Lookup("example.Greeter", "plain")
	v, err := f.New(context.Background(), resource.Input{
		Name:     "hello",
		Settings: []byte(`{"punctuation": "!"}`),
		Deps:     map[string]any{"prefix": "Hello", "audience.b": "Bob", "audience.a": "Ann"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	g := v.(*greeter)
	fmt.Println(g.greeting, g.audience)

	_, err = f.New(context.Background(), resource.Input{Settings: []byte(`{"punctuaton": "!"}`)})
	fmt.Println(errors.Is(err, fault.Validation), err)

	err = reg.Register(greeterFactory{})
	fmt.Println(fault.KindOf(err), err)
	// Output:
	// registered example.Greeter/plain
	// Hello! [a=Ann b=Bob]
	// true decode settings: unknown field "punctuaton" (known: punctuation)
	// conflict register factory: example.Greeter/plain is already registered
}
