package lru

import (
	"testing"
	"time"
)

func TestBoundAndExpiry(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	c := New[int, string](2, time.Second, func() time.Time { return now })
	c.Put(1, "a")
	c.Put(2, "b")
	if _, ok := c.Get(1); !ok { // 1 is now the most recent
		t.Fatal("1 missing")
	}
	c.Put(3, "c") // evicts 2, the least recently used
	if _, ok := c.Get(2); ok {
		t.Fatal("2 survived past the bound")
	}
	if v, ok := c.Get(1); !ok || v != "a" {
		t.Fatalf("1 = %q, %v", v, ok)
	}
	if c.Len() != 2 {
		t.Fatalf("len %d; want 2", c.Len())
	}
	now = now.Add(time.Second)
	if _, ok := c.Get(3); ok {
		t.Fatal("3 survived its ttl")
	}
	var none *Cache[int, int]
	none.Put(1, 1)
	if _, ok := none.Get(1); ok || New[int, int](0, time.Second, nil) != nil {
		t.Fatal("a nil cache holds something")
	}
}

func TestUpdate(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	c := New[int, int](2, time.Second, func() time.Time { return now })
	keepBigger := func(v int) func(int, bool) (int, bool) {
		return func(old int, ok bool) (int, bool) { return v, !ok || v > old }
	}
	c.Update(1, keepBigger(5))
	c.Update(1, keepBigger(3)) // refused: 5 stays
	if v, ok := c.Get(1); !ok || v != 5 {
		t.Fatalf("1 = %d, %v; want 5", v, ok)
	}
	now = now.Add(time.Second)
	c.Update(1, keepBigger(3)) // 5 expired: f sees nothing
	if v, ok := c.Get(1); !ok || v != 3 {
		t.Fatalf("after expiry 1 = %d, %v; want 3", v, ok)
	}
	var none *Cache[int, int]
	none.Update(1, keepBigger(1))
}

func TestDelete(t *testing.T) {
	c := New[int, int](2, time.Minute, nil)
	c.Put(1, 1)
	c.Put(2, 2)
	c.Delete(1)
	c.Delete(3) // absent: nothing happens
	if _, ok := c.Get(1); ok {
		t.Fatal("1 found after its Delete")
	}
	if v, ok := c.Get(2); !ok || v != 2 || c.Len() != 1 {
		t.Fatalf("2 = %d, %v with %d entries; want 2 alone", v, ok, c.Len())
	}
	var none *Cache[int, int]
	none.Delete(1)
}
