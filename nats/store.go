package nats

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/session"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Store is the agent.CheckpointStore of nodes that share a NATS
// deployment: session records, parked runs and run checkpoints on the
// stream of the lease bucket (Config.LeaseBucket), so that any node can
// resume any session. Each exec id has a chain of entries
// (checkpoint.Chain): a snapshot and the deltas after it, each one
// message on the subject
//
//	$KV.<lease_bucket>.cp.<base64url(exec id)>.<entry seq>
//
// whose first byte is the entry's kind (1 snapshot, 2 delta, 0 a
// deletion) and the rest the entry's data. Load reads the last message of
// each of those subjects in stream order and folds them (checkpoint.Fold)
// from the newest snapshot; a deletion after them reads as no record. A
// save that stores a snapshot purges the exec id's older messages.
//
// Writes are fenced: a ctx that carries a session claim of this package's
// ownership (session.ClaimFromContext) writes with the claim's lease
// revision as the expected last sequence of the lease's subject, so the
// server refuses it once another node holds the lease (NotAvailable). A
// refusal because the holder's own renewal moved the revision in between
// is retried once with the new one. A ctx without such a claim writes
// unfenced.
//
// A Store is safe for concurrent use; one store writes an exec id at a
// time. An entry must fit in one NATS message (the server's max_payload,
// 1 MiB by default).
type Store struct {
	b      *Bus
	policy checkpoint.Policy

	mu     sync.Mutex
	chains map[string]*storeChain
	stream jetstream.Stream

	afterDeletion func() // tests: a stall between a deletion entry and its purge
}

// storeChain is one exec id's chain, under its own lock.
type storeChain struct {
	mu    sync.Mutex
	chain checkpoint.Chain
}

// entryDeleted is the kind byte of a deletion.
const entryDeleted = 0

var (
	_ agent.CheckpointStore   = (*Store)(nil)
	_ agent.CheckpointLister  = (*Store)(nil)
	_ agent.CheckpointDeleter = (*Store)(nil)
)

// MaxDeltas is the most deltas a Store keeps after a snapshot: a load
// reads them in one direct get, which returns at most 1024 messages.
const MaxDeltas = 1000

// Checkpoints returns the checkpoint store of the bus's deployment under
// policy (the zero value: checkpoint.DefaultPolicy, with at most
// MaxDeltas deltas). It uses the bus's
// connection; closing the bus ends it.
func (b *Bus) Checkpoints(policy checkpoint.Policy) *Store {
	if policy.MaxDeltas <= 0 || policy.MaxDeltas > MaxDeltas {
		policy.MaxDeltas = MaxDeltas
	}
	return &Store{b: b, policy: policy, chains: map[string]*storeChain{}}
}

func (s *Store) bucket() string { return s.b.cfg.LeaseBucket }

// filter is the subject of every entry of execID; all of every exec id
// when execID is "".
func (s *Store) filter(execID string) string {
	if execID == "" {
		return "$KV." + s.bucket() + ".cp.>"
	}
	return "$KV." + s.bucket() + ".cp." + base64.RawURLEncoding.EncodeToString([]byte(execID)) + ".>"
}

func (s *Store) entrySubject(execID string, seq uint64) string {
	return strings.TrimSuffix(s.filter(execID), ">") + strconv.FormatUint(seq, 10)
}

func (s *Store) jsStream(ctx context.Context) (jetstream.Stream, error) {
	s.mu.Lock()
	st := s.stream
	s.mu.Unlock()
	if st != nil {
		return st, nil
	}
	st, err := s.b.js.Stream(ctx, "KV_"+s.bucket())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.stream = st
	s.mu.Unlock()
	return st, nil
}

func (s *Store) chainOf(execID string) *storeChain {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chains[execID]
	if c == nil {
		c = &storeChain{chain: checkpoint.Chain{Policy: s.policy}}
		s.chains[execID] = c
	}
	return c
}

// Save validates cp and stores it as the next entry of its exec id's
// chain: a delta when cp.Changes follow the entry this store wrote last,
// else a snapshot, after which the exec id's older entries are purged.
func (s *Store) Save(ctx context.Context, cp agent.Checkpoint) error {
	if ctx == nil {
		return fault.New(fault.Validation, "save checkpoint", "ctx must not be nil")
	}
	if err := checkpoint.ValidateExecID(cp.ExecID); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	sc := s.chainOf(cp.ExecID)
	sc.mu.Lock()
	defer sc.mu.Unlock()
	e, err := sc.chain.Next(&cp)
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	seq, err := s.publish(ctx, cp.ExecID, byte(e.Kind), e.Seq, e.Data)
	if err != nil {
		sc.chain.Lost(e)
		return fmt.Errorf("save checkpoint %q: %w", cp.ExecID, err)
	}
	sc.chain.Commit(e, &cp)
	if e.Kind == checkpoint.EntrySnapshot {
		s.purgeBefore(ctx, cp.ExecID, seq)
	}
	return nil
}

// purgeBefore removes the entries of execID older than the stream
// sequence seq; best effort: Load ignores what precedes a snapshot.
func (s *Store) purgeBefore(ctx context.Context, execID string, seq uint64) {
	if seq <= 1 {
		return
	}
	st, err := s.jsStream(ctx)
	if err != nil {
		return
	}
	_ = st.Purge(ctx, jetstream.WithPurgeSubject(s.filter(execID)), jetstream.WithPurgeSequence(seq))
}

// publish stores one entry, fenced by the claim ctx carries, and returns
// its stream sequence.
func (s *Store) publish(ctx context.Context, execID string, kind byte, seq uint64, data []byte) (uint64, error) {
	msg := &natsgo.Msg{Subject: s.entrySubject(execID, seq), Data: append([]byte{kind}, data...)}
	ctx, cancel := s.publishCtx(ctx)
	defer cancel()
	c := s.fence(ctx)
	if c == nil {
		ack, err := s.b.js.PublishMsg(ctx, msg)
		if missing(err) { // the bucket is gone (a server with storage: memory restarted): make it again
			if _, berr := s.b.ensureBucket(ctx); berr == nil {
				ack, err = s.b.js.PublishMsg(ctx, msg)
			}
		}
		if err != nil {
			return 0, s.publishErr(ctx, err, execID, len(msg.Data))
		}
		return ack.Sequence, nil
	}
	for attempt := 0; ; attempt++ {
		lease, rev, err := c.fencing()
		if err != nil {
			return 0, err
		}
		ack, err := s.b.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequenceForSubject(rev, lease))
		if err == nil {
			return ack.Sequence, nil
		}
		if !wrongSequence(err) {
			return 0, s.publishErr(ctx, err, execID, len(msg.Data))
		}
		// The lease's revision moved (a renewal), or the leader refused
		// while a renewal was in flight; a renewal says whether the lease
		// is still the claim's (Claim.heal), and the write goes again at
		// the claim's revision, fenced as before.
		rerr := c.renewOnce()
		if rerr != nil || attempt == fencedAttempts-1 {
			return 0, fault.Wrap(fault.NotAvailable, err, "fenced write", "%s: the lease of %s moved", execID, c.key)
		}
		select {
		case <-time.After(time.Duration(attempt+1) * 10 * time.Millisecond):
		case <-ctx.Done():
			return 0, fault.FromContext(ctx.Err(), "fenced write")
		}
	}
}

// fencedAttempts bounds the tries of a fenced write refused while its
// claim still holds the lease.
const fencedAttempts = 5

func (s *Store) publishCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.b.cfg.PublishTimeout)
}

func (s *Store) publishErr(ctx context.Context, err error, execID string, n int) error {
	if big := s.b.oversize(err, "checkpoint store", execID, n); big != nil {
		return big
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return fault.FromContext(ctx.Err(), "checkpoint store")
	}
	return fault.Wrap(fault.NotAvailable, err, "checkpoint store", "stream KV_%s", s.bucket())
}

// fence returns the claim of this deployment's lease bucket that ctx
// carries, or nil.
func (s *Store) fence(ctx context.Context) *Claim {
	sc, ok := session.ClaimFromContext(ctx)
	if !ok {
		return nil
	}
	c, ok := sc.(*Claim)
	if !ok || c.o.b.cfg.LeaseBucket != s.bucket() {
		return nil
	}
	return c
}

// fencing returns the lease's subject and the claim's revision, or why
// the claim no longer fences anything.
func (c *Claim) fencing() (string, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return "", 0, c.err
	}
	if c.ended {
		return "", 0, fault.New(fault.NotAvailable, "fenced write", "%s: the claim was released", c.key)
	}
	if time.Now().After(c.deadline) {
		return "", 0, c.expiredErr()
	}
	return c.o.subject(c.k), c.rev, nil
}

// Load returns the newest record of execID, or (nil, nil) when there is
// none or it was deleted. Entries that do not fold are a
// *checkpoint.CorruptError.
func (s *Store) Load(ctx context.Context, execID string) (*agent.Checkpoint, error) {
	if ctx == nil {
		return nil, fault.New(fault.Validation, "load checkpoint", "ctx must not be nil")
	}
	if err := checkpoint.ValidateExecID(execID); err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	var cp *agent.Checkpoint
	var err error
	// A save's purge can race a read; a second read sees the new snapshot.
	for range 2 {
		var entries []checkpoint.Entry
		if entries, err = s.entries(ctx, execID); err != nil {
			return nil, err
		}
		if cp, err = checkpoint.Fold(entries); err == nil {
			return cp, nil
		}
	}
	var ce *checkpoint.CorruptError
	if errors.As(err, &ce) && ce.Where == "" {
		ce.Where = s.filter(execID)
	}
	return nil, err
}

// entries reads the entries of execID after its last deletion, in stream
// order. The newest comes from the stream's leader (a consistent read);
// when it is a delta, the rest come in one direct multi-get, which any
// replica may answer: a replica that has not caught up with the newest
// yet is asked again.
func (s *Store) entries(ctx context.Context, execID string) ([]checkpoint.Entry, error) {
	last, err := s.lastEntry(ctx, execID)
	if err != nil || last == nil {
		return nil, err
	}
	if len(last.data) == 0 || last.data[0] != byte(checkpoint.EntryDelta) {
		return s.appendEntry(nil, last.subject, last.data), nil
	}
	for attempt := 0; ; attempt++ {
		msgs, err := s.multiLast(ctx, execID, last.seq)
		if err != nil {
			return nil, err
		}
		if n := len(msgs); n > 0 && msgs[n-1].seq == last.seq {
			var entries []checkpoint.Entry
			for _, m := range msgs {
				entries = s.appendEntry(entries, m.subject, m.data)
			}
			return entries, nil
		}
		if attempt == staleReads {
			return nil, fault.New(fault.NotAvailable, "load checkpoint", "%q: no replica of stream KV_%s has caught up", execID, s.bucket())
		}
		select {
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		case <-ctx.Done():
			return nil, fault.FromContext(ctx.Err(), "load checkpoint")
		}
	}
}

// staleReads bounds how often a load asks again for replicas to catch up.
const staleReads = 20

// lastEntry asks the stream's leader for the newest message of execID;
// nil when there is none. A request that is not answered (lost with a
// connection, or a leader too busy to answer in time) is asked again,
// each attempt waiting twice as long as the one before, within the
// bound of publishCtx.
func (s *Store) lastEntry(ctx context.Context, execID string) (*storedMsg, error) {
	ctx, cancel := s.publishCtx(ctx)
	defer cancel()
	wait := publishAttempt
	for {
		actx, acancel := context.WithTimeout(ctx, wait)
		m, err := s.b.lastMsg(actx, "KV_"+s.bucket(), s.filter(execID))
		acancel()
		switch {
		case err == nil:
			return m, nil
		case ctx.Err() != nil:
			return nil, fault.FromContext(ctx.Err(), "load checkpoint")
		case !unanswered(err):
			return nil, fault.Wrap(fault.KindOr(err, fault.NotAvailable), err, "load checkpoint", "%q", execID)
		}
		wait = min(2*wait, maxPublishAttempt)
		select {
		case <-ctx.Done():
		case <-time.After(retryPause):
		}
	}
}

// multiLast reads the last message of each subject of execID up to the
// stream sequence upTo, in stream order, with one direct get.
func (s *Store) multiLast(ctx context.Context, execID string, upTo uint64) ([]storedMsg, error) {
	ctx, cancel := s.publishCtx(ctx)
	defer cancel()
	inbox := s.b.nc.NewRespInbox()
	sub, err := s.b.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, s.readErr(ctx, err, execID)
	}
	defer func() { _ = sub.Unsubscribe() }()
	req, _ := json.Marshal(map[string]any{"multi_last": []string{s.filter(execID)}, "up_to_seq": upTo})
	if err := s.b.nc.PublishRequest("$JS.API.DIRECT.GET.KV_"+s.bucket(), inbox, req); err != nil {
		return nil, s.readErr(ctx, err, execID)
	}
	var msgs []storedMsg
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, s.readErr(ctx, err, execID)
		}
		switch status := m.Header.Get("Status"); status {
		case "":
		case "204": // the end of the batch
			slices.SortFunc(msgs, func(a, b storedMsg) int { return cmp.Compare(a.seq, b.seq) })
			return msgs, nil
		case "404":
			return nil, nil
		default:
			return nil, fault.New(fault.NotAvailable, "load checkpoint", "%q: direct get: %s %s", execID, status, m.Header.Get("Description"))
		}
		seq, _ := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
		msgs = append(msgs, storedMsg{subject: m.Header.Get("Nats-Subject"), seq: seq, data: m.Data})
	}
}

// appendEntry appends the entry of one message; a deletion drops what
// came before it.
func (s *Store) appendEntry(entries []checkpoint.Entry, subject string, data []byte) []checkpoint.Entry {
	seq, _ := strconv.ParseUint(subject[strings.LastIndexByte(subject, '.')+1:], 10, 64)
	if len(data) == 0 || data[0] == entryDeleted {
		return entries[:0]
	}
	return append(entries, checkpoint.Entry{Kind: checkpoint.EntryKind(data[0]), Seq: seq, Data: data[1:]})
}

func (s *Store) readErr(ctx context.Context, err error, execID string) error {
	if ctx.Err() != nil {
		return fault.FromContext(ctx.Err(), "load checkpoint")
	}
	return fault.Wrap(fault.NotAvailable, err, "load checkpoint", "%q", execID)
}

// List returns the exec ids that have entries, sorted.
func (s *Store) List(ctx context.Context) ([]string, error) {
	if ctx == nil {
		return nil, fault.New(fault.Validation, "list checkpoints", "ctx must not be nil")
	}
	st, err := s.jsStream(ctx)
	if err == nil {
		var info *jetstream.StreamInfo
		if info, err = st.Info(ctx, jetstream.WithSubjectFilter(s.filter(""))); err == nil {
			ids := make([]string, 0, len(info.State.Subjects))
			for subj := range info.State.Subjects {
				tokens := strings.Split(subj, ".")
				if len(tokens) != 5 {
					continue
				}
				if id, derr := base64.RawURLEncoding.DecodeString(tokens[3]); derr == nil && checkpoint.ValidateExecID(string(id)) == nil {
					ids = append(ids, string(id))
				}
			}
			slices.Sort(ids)
			return slices.Compact(ids), nil
		}
	}
	if ctx.Err() != nil {
		return nil, fault.FromContext(ctx.Err(), "list checkpoints")
	}
	return nil, fault.Wrap(fault.NotAvailable, err, "list checkpoints", "stream KV_%s", s.bucket())
}

// Delete removes the record of execID: a deletion entry, fenced like a
// save, then a purge of the exec id's messages. A missing record is not
// an error.
func (s *Store) Delete(ctx context.Context, execID string) error {
	if ctx == nil {
		return fault.New(fault.Validation, "delete checkpoint", "ctx must not be nil")
	}
	if err := checkpoint.ValidateExecID(execID); err != nil {
		return fmt.Errorf("delete checkpoint: %w", err)
	}
	sc := s.chainOf(execID)
	sc.mu.Lock()
	defer sc.mu.Unlock()
	next := sc.chain.Seq() + 1
	seq, err := s.publish(ctx, execID, entryDeleted, next, nil)
	if err != nil {
		return fmt.Errorf("delete checkpoint %q: %w", execID, err)
	}
	sc.chain = checkpoint.ResumeChain(s.policy, next)
	if s.afterDeletion != nil {
		s.afterDeletion()
	}
	// The purge is not fenced: it removes what came up to the deletion
	// entry and no more, so that a node that stalled here while another
	// took the session over leaves the new owner's entries alone.
	st, err := s.jsStream(ctx)
	if err == nil {
		err = st.Purge(ctx, jetstream.WithPurgeSubject(s.filter(execID)), jetstream.WithPurgeSequence(seq+1))
	}
	if err != nil {
		return fault.Wrap(fault.NotAvailable, err, "delete checkpoint", "%q", execID)
	}
	s.mu.Lock()
	delete(s.chains, execID)
	s.mu.Unlock()
	return nil
}
