package social

import (
	"context"
	"io"

	"github.com/feedd/feedd/internal/export"
)

// ExportStore is what Export needs of SQL.
type ExportStore = export.Source

// Export writes everything feedd holds about user to w (package export
// says what and how), read from SQL through the breaker: ENOTFOUND for an
// unknown or deleted user before anything is written.
func (s *Service) Export(ctx context.Context, user int64, w io.Writer) error {
	return export.Write(ctx, s.store, user, w)
}
