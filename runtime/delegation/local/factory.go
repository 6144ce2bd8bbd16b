package local

import (
	"context"
	"log/slog"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/resource"
)

// The impl names and the dependency roles of this package's factories.
const (
	ImplLocal  = "local"
	ImplRandom = "random"

	DepDirectory       = "directory"
	DepSessionProvider = "session_provider"
)

// Factories returns every factory of this package: DirectoryFactory,
// ServiceFactory, SessionProviderFactory and ToolsFactory.
func Factories() []resource.Factory {
	return []resource.Factory{DirectoryFactory(), ServiceFactory(), SessionProviderFactory(), ToolsFactory()}
}

// DirectoryFactory returns the factory of delegation.Directory/local (no
// settings, no deps). Its value is a *Directory, bound to the
// deployment when the deployment is wired.
func DirectoryFactory() resource.Factory {
	return resource.FactoryFunc(resource.Spec{Kind: delegation.DirectoryKind, Impl: ImplLocal},
		func(_ context.Context, in resource.Input) (any, error) {
			if err := resource.DecodeSettings(in.Settings, &struct{}{}); err != nil {
				return nil, err
			}
			return NewDirectory(nil), nil
		})
}

// ServiceFactory returns the factory of delegation.Service/local. Deps:
// "directory" (required, a delegation.Directory) and "session_provider"
// (optional, a delegation.SessionProvider; default RandomProvider).
// Settings: ServiceSettings. Its value is a *Service.
func ServiceFactory() resource.Factory {
	spec := resource.Spec{Kind: delegation.ServiceKind, Impl: ImplLocal, Deps: []resource.DepSpec{
		{Name: DepDirectory, Type: delegation.DirectoryKind, Required: true},
		{Name: DepSessionProvider, Type: delegation.SessionProviderKind},
	}}
	return resource.FactoryFunc(spec, func(_ context.Context, in resource.Input) (any, error) {
		settings, err := resource.DecodeTyped[ServiceSettings](in.Settings)
		if err != nil {
			return nil, err
		}
		dir, err := resource.As[delegation.Directory](DepDirectory, in.Deps[DepDirectory])
		if err != nil {
			return nil, err
		}
		cfg := ServiceConfig{Directory: dir, Settings: settings, Logger: slog.Default().With("delegation", in.Name)}
		if v, ok := in.Deps[DepSessionProvider]; ok {
			if cfg.Provider, err = resource.As[delegation.SessionProvider](DepSessionProvider, v); err != nil {
				return nil, err
			}
		}
		return NewService(cfg)
	})
}

// SessionProviderFactory returns the factory of
// delegation.SessionProvider/random (no settings): RandomProvider.
func SessionProviderFactory() resource.Factory {
	return resource.FactoryFunc(resource.Spec{Kind: delegation.SessionProviderKind, Impl: ImplRandom},
		func(_ context.Context, in resource.Input) (any, error) {
			if err := resource.DecodeSettings(in.Settings, &struct{}{}); err != nil {
				return nil, fault.Wrap(fault.Validation, err, "session provider", "")
			}
			return RandomProvider(), nil
		})
}
