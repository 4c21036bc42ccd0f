package rediscache

import (
	"embed"
	"fmt"
	"strings"
)

// The Lua scripts live in lua/, a file each, each starting with what it
// does, its KEYS and ARGV, what it returns and why it is a script. The
// inbox scripts share fragments: ring.lua, the inbox layout's one
// definition, and the helpers built on it (ring_read.lua, ring_write.lua,
// ring_add.lua, inbox_open.lua). A script pulls a fragment in with a line
//
//	--#include ring.lua
//
// which luaScript replaces with the fragment, where the line stands: Redis
// runs a script as one chunk, so a fragment's locals are in scope after
// it, and an include inside a block defines its helpers only when the
// block runs.
//
//go:embed lua/*.lua
var luaFiles embed.FS

const includeDirective = "--#include "

// luaScript returns the source of lua/name with its includes expanded. It
// panics if a file is missing: the scripts are built when the package is
// initialized, and any test of the package finds the mistake.
func luaScript(name string) string {
	src, err := luaFiles.ReadFile("lua/" + name)
	if err != nil {
		panic(fmt.Sprintf("rediscache: script %s: %v", name, err))
	}
	var b strings.Builder
	for line := range strings.Lines(string(src)) {
		if inc, ok := strings.CutPrefix(strings.TrimSpace(line), includeDirective); ok {
			b.WriteString(luaScript(inc))
			continue
		}
		b.WriteString(strings.TrimSuffix(line, "\n"))
		b.WriteByte('\n')
	}
	return b.String()
}

// The scripts' sources, expanded once. The inbox scripts are in
// inbox.go's and pending.go's calls, the others in post.go's, kv.go's,
// likes.go's and beats.go's.
var (
	fillScript   = luaScript("inbox_fill.lua")
	addScript    = luaScript("inbox_add.lua")
	removeScript = luaScript("inbox_remove.lua")
	pageScript   = luaScript("inbox_page.lua")
	boundsScript = luaScript("inbox_bounds.lua")
	drainScript  = luaScript("inbox_drain.lua")

	postSetScript = luaScript("post_set.lua")

	compareAndDeleteScript = luaScript("kv_compare_delete.lua")
	compareAndExpireScript = luaScript("kv_compare_expire.lua")

	setLikedScript   = luaScript("likes_set.lua")
	revertLikeScript = luaScript("likes_revert.lua")
	fillLikesScript  = luaScript("likes_fill.lua")
	fillCountScript  = luaScript("likes_fill_count.lua")
	settleScript     = luaScript("likes_settle.lua")
	moveCountScript  = luaScript("likes_move_count.lua")
	finishLikeScript = luaScript("likes_finish.lua")

	beatPutScript  = luaScript("beat_put.lua")
	beatListScript = luaScript("beat_list.lua")
)
