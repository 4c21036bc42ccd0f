package rediscache

import (
	"io/fs"
	"strings"
	"testing"
)

// TestLuaFiles checks the form of lua/: every file starts with its header
// comment, named for the file; every script is expanded whole; and every
// file is a script or included in one, so that none lies there unused.
func TestLuaFiles(t *testing.T) {
	scripts := map[string]string{
		"inbox_fill.lua": fillScript, "inbox_add.lua": addScript, "inbox_remove.lua": removeScript,
		"inbox_page.lua": pageScript, "inbox_bounds.lua": boundsScript, "inbox_drain.lua": drainScript,
		"kv_compare_delete.lua": compareAndDeleteScript, "kv_compare_expire.lua": compareAndExpireScript,
		"likes_set.lua": setLikedScript, "likes_revert.lua": revertLikeScript,
		"likes_fill.lua": fillLikesScript, "likes_fill_count.lua": fillCountScript,
		"likes_settle.lua":     settleScript,
		"likes_move_count.lua": moveCountScript, "likes_finish.lua": finishLikeScript,
		"post_set.lua": postSetScript,
		"beat_put.lua": beatPutScript, "beat_list.lua": beatListScript,
	}
	used := map[string]bool{}
	for name, src := range scripts {
		used[name] = true
		if strings.Contains(src, includeDirective) {
			t.Errorf("%s: an include is left after expansion", name)
		}
		raw, err := luaFiles.ReadFile("lua/" + name)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(raw)) {
			if inc, ok := strings.CutPrefix(strings.TrimSpace(line), includeDirective); ok {
				used[inc] = true
			}
		}
	}
	files, err := fs.Glob(luaFiles, "lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("lua/*.lua = %v, %v", files, err)
	}
	for _, f := range files {
		name := strings.TrimPrefix(f, "lua/")
		src, _ := luaFiles.ReadFile(f)
		if !strings.HasPrefix(string(src), "-- "+name+": ") {
			t.Errorf("%s does not start with its header comment (-- %s: what it does …)", f, name)
		}
		if !used[name] {
			t.Errorf("%s is neither a script nor included in one", f)
		}
	}
}
