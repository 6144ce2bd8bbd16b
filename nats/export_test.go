package nats

import "context"

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
