package nats

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// PutAtClaimRevision writes as PutFenced does but without the claim's own
// check, at the revision the claim last knew: what a partitioned node's
// write would carry to the server.
func PutAtClaimRevision(ctx context.Context, o *Ownership, c *Claim, key string, value []byte) (uint64, error) {
	c.mu.Lock()
	k, rev := c.k, c.rev
	c.mu.Unlock()
	return o.putAt(ctx, k, rev, key, value)
}

// Abandon stops renewing c without releasing it, as a node that died
// would.
func Abandon(c *Claim) {
	c.once.Do(func() {
		close(c.stop)
		<-c.done
	})
}

// Believe makes c believe it holds its lease for an hour more, whatever
// the server says: a node cut off from NATS whose clock has not yet told
// it that its lease lapsed.
func Believe(c *Claim) {
	c.mu.Lock()
	c.deadline = c.deadline.Add(time.Hour)
	c.mu.Unlock()
}

// PurgeAll removes every entry of every exec id s holds, and forgets its
// chains: a store as fresh as a new bucket's.
func PurgeAll(ctx context.Context, s *Store) error {
	st, err := s.jsStream(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	clear(s.chains)
	s.mu.Unlock()
	return st.Purge(ctx, jetstream.WithPurgeSubject(s.filter("")))
}

// PauseAfterDeletion makes s call f between a Delete's deletion entry
// and its purge: a node that stalls there (a GC pause, a busy machine)
// while another node takes its session over.
func PauseAfterDeletion(s *Store, f func()) { s.afterDeletion = f }
