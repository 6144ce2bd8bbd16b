package session

// ManagerBinder is implemented by a deployment resource that needs the
// runtime's session manager (a delegation service that runs sub-runs as
// real turns, for example). The runtime binds at most one such resource per
// generation, once, after the manager exists.
type ManagerBinder interface {
	BindSessionManager(m *Manager) error
}
