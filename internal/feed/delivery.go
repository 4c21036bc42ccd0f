package feed

import "fmt"

// FanoutMode is the timeline model a deployment runs (FEEDD_FANOUT_MODE).
type FanoutMode string

const (
	// ModePush writes every post into every follower's inbox.
	ModePush FanoutMode = "push"
	// ModePull writes no inboxes: a read merges the newest posts of
	// everyone the reader follows, from SQL.
	ModePull FanoutMode = "pull"
	// ModeHybrid pushes the posts of authors below the pull threshold and
	// merges those of bigger authors from their author lists at read time.
	ModeHybrid FanoutMode = "hybrid"
)

// ParseFanoutMode parses push, pull or hybrid.
func ParseFanoutMode(s string) (FanoutMode, error) {
	switch m := FanoutMode(s); m {
	case ModePush, ModePull, ModeHybrid:
		return m, nil
	}
	return "", fmt.Errorf("fan-out mode %q: want push, pull or hybrid", s)
}

// Delivery modes of one author, as GET /v1/users/{id} shows them.
const (
	DeliveryPush = "push"
	DeliveryPull = "pull"
)

// DeliveryPolicy decides, per author, whether posts are pushed or pulled.
// In hybrid mode an author turns pull at PullThreshold followers and back
// to push only below 90% of it, so an author hovering at the threshold
// does not flip on every follow.
type DeliveryPolicy struct {
	Mode          FanoutMode
	PullThreshold int64
}

// Default policy: hybrid, pulling authors from 100,000 followers.
const (
	DefaultFanoutMode    = ModeHybrid
	DefaultPullThreshold = 100_000
)

// WithDefaults fills p's zero fields with the defaults, for every service
// that reads a policy (the timeline's reads, the writes' users).
func (p DeliveryPolicy) WithDefaults() DeliveryPolicy {
	if p.Mode == "" {
		p.Mode = DefaultFanoutMode
	}
	if p.PullThreshold <= 0 {
		p.PullThreshold = DefaultPullThreshold
	}
	return p
}

// Band returns the hysteresis band [low, high): at or above high an author
// is pulled, below low pushed, in between it keeps its stored state.
func (p DeliveryPolicy) Band() (low, high int64) {
	high = p.PullThreshold
	return high - high/10, high
}

// Pulls reports whether u's posts are pulled at read time.
func (p DeliveryPolicy) Pulls(u User) bool {
	switch p.Mode {
	case ModePush:
		return false
	case ModePull:
		return true
	}
	low, high := p.Band()
	switch {
	case u.FollowerCount >= high:
		return true
	case u.FollowerCount < low:
		return false
	}
	return u.PullMode
}

// ModeOf returns DeliveryPush or DeliveryPull for u.
func (p DeliveryPolicy) ModeOf(u User) string {
	if p.Pulls(u) {
		return DeliveryPull
	}
	return DeliveryPush
}
