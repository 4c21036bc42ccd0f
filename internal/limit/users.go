package limit

import "sync"

// UserSlots bounds each user's requests in flight, reads and writes
// together. The token buckets bound how often a user may start a request;
// this bounds how many they may hold open at once, so that one user's slow
// requests (a body trickling in, a page waiting on a slow backend) cannot
// take the slots that the Shedder shares among everyone. A nil *UserSlots
// admits everything.
type UserSlots struct {
	max int

	mu     sync.Mutex
	counts map[int64]int // users with at least one request in flight; guarded by mu
}

// DefaultUserMaxInFlight is the bound feedd's flag starts from: more than
// a person or an app's server has in flight for one user, far fewer than
// the Shedder's slots.
const DefaultUserMaxInFlight = 16

// NewUserSlots bounds each user to max requests in flight; max <= 0 is no
// bound (nil).
func NewUserSlots(max int) *UserSlots {
	if max <= 0 {
		return nil
	}
	return &UserSlots{max: max, counts: map[int64]int{}}
}

// Acquire takes one of user's slots and returns the function that gives it
// back, or ok=false at once when user already has max in flight. User 0
// (no user: the admin, anonymous routes) is not bounded. The map holds only
// users with a request in flight, so its size is bounded by the requests
// the server is serving.
func (s *UserSlots) Acquire(user int64) (release func(), ok bool) {
	if s == nil || user == 0 {
		return func() {}, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts[user] >= s.max {
		return nil, false
	}
	s.counts[user]++
	var once sync.Once
	return func() { once.Do(func() { s.release(user) }) }, true
}

func (s *UserSlots) release(user int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts[user] <= 1 {
		delete(s.counts, user)
		return
	}
	s.counts[user]--
}

// InFlight returns how many requests user has in flight.
func (s *UserSlots) InFlight(user int64) int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[user]
}

// Users returns how many users have a request in flight.
func (s *UserSlots) Users() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.counts)
}
