package social

import (
	"context"

	"github.com/feedd/feedd/internal/feed"
)

// SettingsStore is what settings.go needs of SQL.
type SettingsStore interface {
	Settings(ctx context.Context, user int64) (feed.Settings, error)
	SetSettings(ctx context.Context, user int64, st feed.Settings) error
}

// Settings returns user's settings.
func (s *Service) Settings(ctx context.Context, user int64) (feed.Settings, error) {
	return s.store.Settings(ctx, user)
}

// SetSettings stores user's settings. The home feed's reply rule travels
// with the user's hidden set, which the read engine publishes again
// (timeline.Service.SettingsChanged), and the user's open streams are
// told to read it again, as after a mute.
func (s *Service) SetSettings(ctx context.Context, user int64, st feed.Settings) error {
	if err := s.store.SetSettings(ctx, user, st); err != nil {
		return err
	}
	s.timeline.SettingsChanged(ctx, user)
	s.followsChanged(ctx, "settings", user)
	return nil
}
