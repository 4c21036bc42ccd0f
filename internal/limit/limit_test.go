package limit

import (
	"context"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed/feedtest"
)

func TestPerUserBucket(t *testing.T) {
	clk := feedtest.NewClock(time.Unix(1_700_000_000, 0))
	r := NewRates(Config{PerUser: map[Class]Rule{Write: {Rate: 1, Burst: 3}}, Now: clk.Now})
	for i := range 3 {
		if v := r.Allow(Write, 7); !v.OK {
			t.Fatalf("request %d of the burst refused: %+v", i+1, v)
		}
	}
	v := r.Allow(Write, 7)
	if v.OK || v.Scope != "user" || v.RetryAfter <= 0 || v.RetryAfter > time.Second {
		t.Fatalf("4th request = %+v; want refused by the user bucket, retry within 1s", v)
	}
	if v := r.Allow(Write, 8); !v.OK {
		t.Fatalf("another user refused: %+v", v)
	}
	if v := r.Allow(Read, 7); !v.OK {
		t.Fatalf("a read refused by the write bucket: %+v", v)
	}
	clk.Add(time.Second)
	if v := r.Allow(Write, 7); !v.OK {
		t.Fatalf("after a second the bucket has a token again; got %+v", v)
	}
}

func TestGlobalBucketAndRefund(t *testing.T) {
	clk := feedtest.NewClock(time.Unix(1_700_000_000, 0))
	r := NewRates(Config{
		PerUser: map[Class]Rule{Write: {Rate: 1, Burst: 1}},
		Global:  map[Class]Rule{Write: {Rate: 1, Burst: 2}},
		Now:     clk.Now,
	})
	if !r.Allow(Write, 1).OK || !r.Allow(Write, 2).OK {
		t.Fatal("the first two users were refused")
	}
	v := r.Allow(Write, 3)
	if v.OK || v.Scope != "global" {
		t.Fatalf("third user = %+v; want refused by the global bucket", v)
	}
	// User 3 was refused globally: its own token was given back.
	clk.Add(time.Second)
	if v := r.Allow(Write, 3); !v.OK {
		t.Fatalf("user 3 after a second = %+v; want allowed", v)
	}
	if v := r.Allow(Write, 3); v.Scope != "user" {
		t.Fatalf("user 3 again = %+v; want refused by its own bucket", v)
	}
}

func TestUserBucketsAreBounded(t *testing.T) {
	clk := feedtest.NewClock(time.Unix(1_700_000_000, 0))
	r := NewRates(Config{PerUser: map[Class]Rule{Write: {Rate: 1, Burst: 1}}, MaxUsers: 100, IdleAfter: time.Minute, Now: clk.Now})
	for u := int64(1); u <= 10_000; u++ {
		r.Allow(Write, u)
	}
	if n := r.Users(); n > 100 {
		t.Fatalf("%d buckets held; want at most 100", n)
	}
	clk.Add(2 * time.Minute)
	r.Allow(Write, 1)
	if n := r.Users(); n != 1 {
		t.Fatalf("%d buckets held after every other user went idle; want 1", n)
	}
}

func TestShedder(t *testing.T) {
	s := NewShedder(map[Class]int{Read: 2}, 20*time.Millisecond)
	ctx := context.Background()
	r1, ok1 := s.Acquire(ctx, Read)
	_, ok2 := s.Acquire(ctx, Read)
	if !ok1 || !ok2 {
		t.Fatal("the first two reads were shed")
	}
	if _, ok := s.Acquire(ctx, Read); ok {
		t.Fatal("a third read got a slot; want shed after the wait")
	}
	if _, ok := s.Acquire(ctx, Write); !ok {
		t.Fatal("a write was shed by the read bound")
	}
	// A slot freed during the wait is taken.
	go func() { time.Sleep(5 * time.Millisecond); r1() }()
	s2 := NewShedder(map[Class]int{Read: 1}, time.Second)
	rel, _ := s2.Acquire(ctx, Read)
	go func() { time.Sleep(5 * time.Millisecond); rel() }()
	if _, ok := s2.Acquire(ctx, Read); !ok {
		t.Fatal("a read waiting for a slot that freed up was shed")
	}
	if s.InFlight(Read) > 2 {
		t.Fatalf("in flight %d; want at most 2", s.InFlight(Read))
	}
}

// BenchmarkAdmission is the cost the guard adds to each request: a token
// from the user's and the global bucket, and an in-flight slot.
func BenchmarkAdmission(b *testing.B) {
	r := NewRates(Config{
		PerUser: map[Class]Rule{Write: {Rate: 1e9, Burst: 1 << 30}},
		Global:  map[Class]Rule{Write: {Rate: 1e9, Burst: 1 << 30}},
	})
	s := NewShedder(map[Class]int{Write: 1 << 20}, 0)
	ctx := context.Background()
	b.Run("rates", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			var u int64
			for pb.Next() {
				u = (u + 1) % 10_000
				r.Allow(Write, u+1)
			}
		})
	})
	b.Run("shed", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				release, _ := s.Acquire(ctx, Write)
				release()
			}
		})
	})
}

func TestUserSlots(t *testing.T) {
	s := NewUserSlots(2)
	r1, ok1 := s.Acquire(7)
	r2, ok2 := s.Acquire(7)
	if !ok1 || !ok2 {
		t.Fatal("user 7's first two requests refused")
	}
	if _, ok := s.Acquire(7); ok {
		t.Fatal("user 7's third request in flight admitted; want refused")
	}
	if r, ok := s.Acquire(8); !ok {
		t.Fatal("another user refused by user 7's bound")
	} else {
		r()
	}
	for range 5 {
		if _, ok := s.Acquire(0); !ok {
			t.Fatal("user 0 (the admin) refused; want never bounded")
		}
	}
	r1()
	r1() // a second release of the same slot gives nothing back twice
	if n := s.InFlight(7); n != 1 {
		t.Fatalf("user 7 in flight %d after one release; want 1", n)
	}
	r3, ok := s.Acquire(7)
	if !ok {
		t.Fatal("a freed slot was not reusable")
	}
	r2()
	r3()
	if n := s.Users(); n != 0 {
		t.Fatalf("%d users held after every release; want 0 (the map keeps only users in flight)", n)
	}
	if NewUserSlots(0) != nil {
		t.Fatal("a bound of 0 is not 'no bound'")
	}
	var none *UserSlots
	if _, ok := none.Acquire(7); !ok {
		t.Fatal("a nil UserSlots refused")
	}
}
