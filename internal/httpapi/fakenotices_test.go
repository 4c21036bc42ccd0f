package httpapi

import (
	"context"

	"github.com/feedd/feedd/internal/feed"
)

// The fake has no notifications: an empty page and marker, enough for the
// route table's tests; cmd/feedd tests the real ones.

func (f *fakeService) Notifications(ctx context.Context, reader, before int64, kinds []feed.NoticeKind, n int) (feed.NoticePage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return feed.NoticePage{}, f.record("Notifications", reader, before, kinds, n)
}

func (f *fakeService) NotificationsMarker(ctx context.Context, reader int64) (feed.Marker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return feed.Marker{}, f.record("NotificationsMarker", reader)
}

func (f *fakeService) SetNotificationsMarker(ctx context.Context, reader, lastRead int64) (feed.Marker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return feed.Marker{LastReadID: lastRead}, f.record("SetNotificationsMarker", reader, lastRead)
}
