package likes

// The process's own copy of like counts (Config.LocalCountTTL): a page
// asks the cache only for the counts it does not hold, and a like handled
// here shows here at once.

// localCount is a like count held in process; seq is the writes number
// of the like that put it, 0 if a read did. unknown marks a post whose
// counter overlapping likes moved: a page asks the cache for it.
type localCount struct {
	n       int64
	seq     uint64
	unknown bool
}

type moving struct {
	n       int  // likes of the post in flight
	overlap bool // some of them overlapped
}

// startMove and endMove bracket a like's move of post's counter. endMove
// holds the counter's value just after the like in process, so that this
// process shows it at once — unless another like of the post in this
// process overlapped it: then either value may be the older, and the
// post is marked for the next page to ask the cache. Holding it under mu
// orders it before any later like's.
func (s *Service) startMove(post int64) {
	if s.counts == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.moving[post]
	if m == nil {
		m = &moving{}
		s.moving[post] = m
	}
	m.n++
	m.overlap = m.overlap || m.n > 1
}

func (s *Service) endMove(post, n int64, known bool) {
	if s.counts == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.moving[post]
	s.counts.Put(post, localCount{n: n, seq: s.writes.Add(1), unknown: !known || m.overlap})
	if m.n--; m.n == 0 {
		delete(s.moving, post)
	}
}

// learn keeps counts read from the cache or SQL in process, except where
// a like of this process put a count since from (s.writes when the read
// began): the read may have happened before that like.
func (s *Service) learn(from uint64, counts map[int64]int64) {
	if s.counts == nil {
		return
	}
	for id, n := range counts {
		s.counts.Update(id, func(old localCount, ok bool) (localCount, bool) {
			return localCount{n: n}, !ok || old.seq <= from
		})
	}
}
