package shards

import (
	"context"
	"time"
)

// SyncDueAt is SyncDue as if the clock read now: a test makes the journal
// rows due without waiting for sqlstore.SyncDelay.
func SyncDueAt(ctx context.Context, s *Store, now time.Time) (int, error) { return s.syncDue(ctx, now) }

// HandleShard is the shard of handle h's claim.
func HandleShard(s *Store, h string) int { return s.handleShard(h) }
