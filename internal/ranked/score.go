package ranked

import (
	"math"
	"time"
)

// Signals are what a candidate's score is made of.
type Signals struct {
	Weight   float64       // the application's weight of the post (0..100, default 1)
	Likes    int64         // the post's likes
	Affinity int           // the reader's recent likes of the post's author
	Age      time.Duration // since the post was made
}

// Score is a candidate's score under c:
//
//	weight × (1 + Engagement·ln(1+likes)) × (1 + Affinity·ln(1+affinity)) × 2^(−age/HalfLife)
//
// Each factor is 1 for a post without the signal, so a post nobody liked,
// by an author the reader never liked, of weight 1, made now, scores 1;
// logarithms, so that the thousandth like counts less than the first
// few; a half-life, so that a post of twice another's engagement factor
// ranks level with it one half-life later. Weight 0 is 0: such a post is
// no candidate at all.
func (c Config) Score(s Signals) float64 {
	engagement := 1 + c.Engagement*math.Log1p(float64(max(s.Likes, 0)))
	affinity := 1 + c.Affinity*math.Log1p(float64(max(s.Affinity, 0)))
	freshness := math.Exp2(-max(s.Age, 0).Hours() / c.HalfLife.Hours())
	return s.Weight * engagement * affinity * freshness
}
