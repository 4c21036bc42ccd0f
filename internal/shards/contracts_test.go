package shards_test

import (
	"github.com/feedd/feedd/internal/importer"
	"github.com/feedd/feedd/internal/likes"
	"github.com/feedd/feedd/internal/shards"
	"github.com/feedd/feedd/internal/social"
)

// The router stands in for sqlstore.Store wherever the services take one.
var (
	_ social.GraphStore    = (*shards.Store)(nil)
	_ social.RelationStore = (*shards.Store)(nil)
	_ social.DeletionStore = (*shards.Store)(nil)
	_ social.PurgeStore    = (*shards.Store)(nil)
	_ likes.Applier        = (*shards.Store)(nil)
	_ likes.Store          = (*shards.Store)(nil)
	_ importer.Store       = (*shards.Store)(nil)
)
