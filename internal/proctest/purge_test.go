package proctest

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// TestPurgeSurvivesSIGKILL: the work process running a deleted user's
// purge is killed with SIGKILL in the middle of it (its batch transaction
// cut off). Another work process resumes the purge once the dead one's
// lease runs out and finishes it: nothing of the user is left, and every
// follower's following count is exact.
func TestPurgeSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	const followers = 60000
	s := newStack(t, mariaDB)
	s.migrate()
	env := s.with("FEEDD_AUTO_MIGRATE", "false", "FEEDD_PURGE_LEASE", "2s")
	serve := startReady(t, "serve", env, "serve")
	api := serve.api()
	victim, victimTok := api.newUser(s.admin, "victim")
	for range 3 {
		api.publish(victimTok, "soon gone")
	}
	ctx := context.Background()
	gen := feed.NewIDGen(nil)
	ids := make([]int64, followers)
	users := make([]feed.User, followers)
	for i := range ids {
		ids[i] = gen.Next()
		users[i] = feed.User{ID: ids[i], Name: "follower"}
	}
	if err := s.store.BulkCreateUsers(ctx, users); err != nil {
		t.Fatal(err)
	}
	if err := s.store.BulkFollow(ctx, victim, ids); err != nil {
		t.Fatal(err)
	}
	work1 := startReady(t, "work 1", env, "work")
	id := strconv.FormatInt(victim, 10)
	api.must(202, "DELETE", "/v1/users/"+id, s.admin, nil)

	// Kill as soon as a few batches are in: the purge is under way and
	// far from done.
	db := s.store.DB()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var removed int64
		if err := db.QueryRow("SELECT followers_removed FROM user_purges WHERE user_id = ?", victim).Scan(&removed); err != nil {
			t.Fatal(err)
		}
		if removed >= 3000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the purge removed %d followers within 30s", removed)
		}
		time.Sleep(2 * time.Millisecond)
	}
	work1.signal(syscall.SIGKILL)
	if st := work1.wait(10 * time.Second); !killedBy(st, syscall.SIGKILL) {
		t.Fatalf("work 1 ended with %v; want killed by SIGKILL", st)
	}
	job := api.must(200, "GET", "/v1/admin/jobs/"+id, s.admin, nil)
	if job["status"] != "running" {
		t.Fatalf("job at the kill: %v; want running", job)
	}
	t.Logf("SIGKILL with %v of %d followers removed", job["removed"], followers)

	startReady(t, "work 2", env, "work")
	deadline = time.Now().Add(60 * time.Second)
	for api.must(200, "GET", "/v1/admin/jobs/"+id, s.admin, nil)["status"] != "done" {
		if time.Now().After(deadline) {
			t.Fatal("the purge was not finished within 60s of the second work process")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var left, wrong int
	if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM follows WHERE followee_id = ? OR follower_id = ?)
		+ (SELECT COUNT(*) FROM posts WHERE author_id = ?) + (SELECT COUNT(*) FROM users WHERE id = ?)`,
		victim, victim, victim, victim).Scan(&left); err != nil || left != 0 {
		t.Errorf("rows of the victim left: %d, %v; want 0", left, err)
	}
	if err := db.QueryRow(`SELECT COUNT(*) FROM users u
		WHERE u.following_count <> (SELECT COUNT(*) FROM follows f WHERE f.follower_id = u.id)`).Scan(&wrong); err != nil || wrong != 0 {
		t.Errorf("users whose following count is wrong: %d, %v; want 0", wrong, err)
	}
	if job := api.must(200, "GET", "/v1/admin/jobs/"+id, s.admin, nil); job["removed"].(map[string]any)["followers"] != float64(followers) {
		t.Errorf("job: %v; want %d followers removed", job, followers)
	}
}
