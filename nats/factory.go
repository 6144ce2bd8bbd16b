package nats

import (
	"context"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
)

// ImplNATS is the implementation name of the bus factory.
const ImplNATS = "nats"

// Settings are the settings of an event.Bus/nats resource, decoded
// strictly (unknown keys are errors). Durations are Go durations ("10s").
type Settings struct {
	URL            string   `json:"url"`                        // required; several servers separated by commas
	Node           string   `json:"node,omitempty"`             // default: host name and 4 random bytes
	Advertise      string   `json:"advertise,omitempty"`        // where clients reach this node
	SubjectPrefix  string   `json:"subject_prefix,omitempty"`   // default corral
	Stream         string   `json:"stream,omitempty"`           // default CORRAL_EVENTS
	Replicas       int      `json:"replicas,omitempty"`         // 1..5, default 1
	Storage        string   `json:"storage,omitempty"`          // file (default) or memory
	MaxAge         string   `json:"max_age,omitempty"`          // default 24h
	Ephemeral      []string `json:"ephemeral,omitempty"`        // default [agent.run.*.stream.>]
	BufferSize     *int     `json:"buffer_size,omitempty"`      // 1..1048576, default 64
	RouteCacheSize *int     `json:"route_cache_size,omitempty"` // 0 = off, default 1024
	LeaseBucket    string   `json:"lease_bucket,omitempty"`     // default CORRAL_SESSIONS
	LeaseTTL       string   `json:"lease_ttl,omitempty"`        // default 10s, at least 1s
	NoDiscovery    bool     `json:"no_discovery,omitempty"`     // only the servers of url, not those the cluster announces
	ConnectTimeout string   `json:"connect_timeout,omitempty"`  // default 5s
	PublishTimeout string   `json:"publish_timeout,omitempty"`  // default 5s
}

// Config returns the Config the settings stand for.
func (s Settings) Config() (Config, error) {
	const op = "nats settings"
	mem := event.MemorySettings{BufferSize: s.BufferSize, RouteCacheSize: s.RouteCacheSize}
	if err := (event.MemorySettings{BufferSize: s.BufferSize}).Validate(); err != nil {
		return Config{}, invalid(op, "buffer_size", err)
	}
	if err := mem.Validate(); err != nil {
		return Config{}, invalid(op, "route_cache_size", err)
	}
	cfg := Config{URL: s.URL, Node: s.Node, Advertise: s.Advertise, SubjectPrefix: s.SubjectPrefix,
		Stream: s.Stream, Replicas: s.Replicas, Ephemeral: s.Ephemeral, Bus: mem.BusConfig(), LeaseBucket: s.LeaseBucket,
		NoDiscovery: s.NoDiscovery}
	switch s.Storage {
	case "", "file":
	case "memory":
		cfg.Memory = true
	default:
		return Config{}, invalidf(op, "storage", "%q is neither file nor memory", s.Storage)
	}
	for _, d := range []struct {
		name string
		v    string
		out  *time.Duration
	}{
		{"max_age", s.MaxAge, &cfg.MaxAge}, {"lease_ttl", s.LeaseTTL, &cfg.LeaseTTL},
		{"connect_timeout", s.ConnectTimeout, &cfg.ConnectTimeout}, {"publish_timeout", s.PublishTimeout, &cfg.PublishTimeout},
	} {
		if d.v == "" {
			continue
		}
		v, err := time.ParseDuration(d.v)
		if err != nil || v <= 0 {
			return Config{}, invalidf(op, d.name, "%q is not a positive duration", d.v)
		}
		*d.out = v
	}
	return cfg.resolve()
}

// BusFactory returns the factory of event.Bus/nats resources: a Bus
// connected with the resource's Settings, whose string values may use
// the document's references (${env:NATS_URL}). The deployment closes it.
//
//	events:
//	  kind: event.Bus
//	  impl: nats
//	  settings: {url: "nats://n1:4222,nats://n2:4222,nats://n3:4222", replicas: 3, lease_ttl: 10s}
func BusFactory() resource.Factory {
	return resource.FactoryFunc(resource.Spec{Kind: event.KindBus, Impl: ImplNATS}, newBusResource)
}

func newBusResource(ctx context.Context, in resource.Input) (any, error) {
	const op = "build " + event.KindBus + "/" + ImplNATS
	raw, err := in.ExpandSettings()
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "resource %q", in.Name)
	}
	var s Settings
	if err := resource.DecodeSettings(raw, &s); err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "resource %q", in.Name)
	}
	cfg, err := s.Config()
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "resource %q", in.Name)
	}
	b, err := Connect(ctx, cfg)
	if err != nil {
		return nil, fault.Wrap(fault.KindOr(err, fault.NotAvailable), err, op, "resource %q", in.Name)
	}
	return b, nil
}

// ImplJetStream is the implementation name of the checkpoint store
// factory; BusDep is its dependency role.
const (
	ImplJetStream = "jetstream"
	BusDep        = "bus"
)

// StoreSettings are the settings of a checkpoint.Store/jetstream
// resource, decoded strictly.
type StoreSettings struct {
	// MaxDeltas is the number of deltas after a snapshot past which a
	// save stores a snapshot (checkpoint.Policy); 0: the default.
	MaxDeltas int `json:"max_deltas,omitempty"`
}

// StoreFactory returns the factory of checkpoint.Store/jetstream
// resources: the Store of the nats bus bound to its required dependency
// "bus" (an event.Bus/nats resource), on that bus's lease bucket. The bus
// owns the connection; the store holds nothing to close.
//
//	checkpoints:
//	  kind: checkpoint.Store
//	  impl: jetstream
//	  deps: {bus: events}
func StoreFactory() resource.Factory {
	spec := resource.Spec{
		Kind: checkpoint.Kind,
		Impl: ImplJetStream,
		Deps: []resource.DepSpec{{Name: BusDep, Type: event.KindBus, Required: true}},
	}
	return resource.FactoryFunc(spec, newStoreResource)
}

func newStoreResource(ctx context.Context, in resource.Input) (any, error) {
	op := "build " + checkpoint.Kind + "/" + ImplJetStream
	if err := ctx.Err(); err != nil {
		return nil, fault.FromContext(err, op)
	}
	s, err := resource.DecodeTyped[StoreSettings](in.Settings)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "resource %q: settings", in.Name)
	}
	if s.MaxDeltas < 0 {
		return nil, fault.Wrap(fault.Validation, invalidf(op, "max_deltas", "%d is negative", s.MaxDeltas), op, "resource %q", in.Name)
	}
	v, ok := in.Dep(BusDep)
	if !ok || v == nil {
		return nil, fault.New(fault.Validation, op, "resource %q: dep %q is required", in.Name, BusDep)
	}
	b, ok := v.(*Bus)
	if !ok {
		return nil, fault.New(fault.Validation, op, "resource %q: dep %q is a %T, not an event.Bus/nats", in.Name, BusDep, v)
	}
	return b.Checkpoints(checkpoint.Policy{MaxDeltas: s.MaxDeltas}), nil
}
