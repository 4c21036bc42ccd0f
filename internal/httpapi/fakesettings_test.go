package httpapi

import (
	"context"

	"github.com/feedd/feedd/internal/feed"
)

func (f *fakeService) Settings(ctx context.Context, user int64) (feed.Settings, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Settings", user); err != nil {
		return feed.Settings{}, err
	}
	if _, ok := f.users[user]; !ok {
		return feed.Settings{}, feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	return f.settings[user], nil
}

func (f *fakeService) SetSettings(ctx context.Context, user int64, st feed.Settings) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("SetSettings", user, st); err != nil {
		return err
	}
	if _, ok := f.users[user]; !ok {
		return feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	if f.settings == nil {
		f.settings = map[int64]feed.Settings{}
	}
	f.settings[user] = st
	return nil
}
