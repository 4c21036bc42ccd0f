package stream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// A user's streams are bounded across the processes that share a cache
// (Config.Slots): each open stream holds one of MaxPerUser slot keys of
// its user, whose value names its process, and the stream deletes it when
// it closes. Each process keeps a key of its own alive (procKey, renewed
// at every heartbeat by Run): a slot whose process's key has expired was
// left by a process that died, and the next stream of the user that
// needs it takes it. So an idle stream costs the cache nothing, and the
// slots of a dead process are free within three heartbeats (45 s by
// default). Each process also keeps the bound on its own streams
// (Hub.perUser), which holds alone while the cache cannot be reached.

const (
	// slotTimeout bounds the cache calls of one open or release: a slow
	// cache costs a stream its cross-process bound, not its opening.
	slotTimeout = 500 * time.Millisecond
	// slotTTL only keeps the cache clean of slots nobody will ever
	// release (a whole deployment gone): a process that lives keeps its
	// slots through procKey, however long its streams stay open.
	slotTTL = 24 * time.Hour
)

func slotKey(reader int64, k int) string { return fmt.Sprintf("streamslot:%d:%d", reader, k) }

func procKey(proc string) string { return "streamproc:" + proc }

func newProcID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// procTTL is how long a process's key outlives its last renewal.
func (h *Hub) procTTL() time.Duration { return 3 * h.cfg.Heartbeat }

// keepAlive renews this process's key; Run calls it at every heartbeat.
func (h *Hub) keepAlive(ctx context.Context) {
	if h.cfg.Slots == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, slotTimeout)
	defer cancel()
	if err := h.cfg.Slots.Set(ctx, procKey(h.proc), "1", h.procTTL()); err != nil {
		h.logger.Warn("stream: renew this process's key; its streams' slots may be taken", "err", err)
	}
}

// claimSlot takes a free slot of s's reader for s, or fails with
// ERATELIMIT when all MaxPerUser of them are held by live processes. A
// cache that fails leaves s without a slot, bounded by this process's
// count alone.
func (h *Hub) claimSlot(ctx context.Context, s *Stream) error {
	kv := h.cfg.Slots
	if kv == nil {
		return nil
	}
	// The process's key exists before its first slot does, even when a
	// stream opens before Run has started.
	h.aliveOnce.Do(func() { h.keepAlive(ctx) })
	var b [8]byte
	_, _ = rand.Read(b[:])
	owner := h.proc + "/" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(ctx, slotTimeout)
	defer cancel()
	degrade := func(err error) error {
		h.logger.Warn("stream: the per-user bound is this process's alone for this stream: the cache failed", "reader", s.reader, "err", err)
		return nil
	}
	for k := range h.cfg.MaxPerUser {
		key := slotKey(s.reader, k)
		ok, err := kv.SetNX(ctx, key, owner, slotTTL)
		if err != nil {
			return degrade(err)
		}
		if !ok {
			// Held: by a live process, or left by a dead one.
			holder, found, err := kv.Get(ctx, key)
			if err != nil {
				return degrade(err)
			}
			proc, _, _ := strings.Cut(holder, "/")
			if found && proc != h.proc {
				_, alive, err := kv.Get(ctx, procKey(proc))
				if err != nil {
					return degrade(err)
				}
				if !alive {
					if _, err := kv.CompareAndDelete(ctx, key, holder); err != nil {
						return degrade(err)
					}
					found = false
				}
			}
			if found {
				continue
			}
			if ok, err = kv.SetNX(ctx, key, owner, slotTTL); err != nil {
				return degrade(err)
			}
		}
		if ok {
			s.slot, s.slotOwner = key, owner
			return nil
		}
	}
	return feed.Errorf(feed.ERATELIMIT, "you have %d streams open, the most allowed; close one first", h.cfg.MaxPerUser)
}

// releaseSlot frees s's slot for the user's next stream, here or on
// another process.
func (h *Hub) releaseSlot(s *Stream) {
	if s.slot == "" || h.cfg.Slots == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), slotTimeout)
	defer cancel()
	if _, err := h.cfg.Slots.CompareAndDelete(ctx, s.slot, s.slotOwner); err != nil {
		h.logger.Warn("stream: release the per-user slot; it is freed once this process's key expires", "reader", s.reader, "err", err)
	}
}
