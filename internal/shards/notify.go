package shards

import (
	"context"
	"errors"
)

// NotifyOutbox wakes the relays of the shards whose outbox received an
// event since the last call (on PostgreSQL; elsewhere it returns
// errors.ErrUnsupported as one database does): a post's publish marks its
// shard (CreatePost), so a wake-up costs a statement per shard written,
// not one per shard.
func (s *Store) NotifyOutbox(ctx context.Context) error {
	var errs []error
	for k := range s.shards {
		if !s.wrote[k].Swap(false) {
			continue
		}
		if err := s.Shard(k).NotifyOutbox(ctx); err != nil {
			if errors.Is(err, errors.ErrUnsupported) {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
