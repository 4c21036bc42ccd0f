package feed

import (
	"math"
	"strconv"
)

// MaxWeight bounds a post's weight: an application weighs its posts from 0
// (never in a ranked feed, always in the latest one) to MaxWeight.
const MaxWeight = 100

// Weight is the application's own weight of a post in ranked feeds
// (package ranked multiplies a post's score by it). The zero Weight is the
// default weight, 1, so that a post made without one — by an import, a
// bulk load, or a client that never heard of weights — ranks as a post the
// API made with none; WeightOf(1) is that same zero value, so two posts
// of equal weight always compare equal.
type Weight struct {
	v   float64
	set bool // false: the default, 1
}

// DefaultWeight is the weight of a post made without one.
const DefaultWeight = 1.0

// WeightOf is the Weight of value v, which CheckWeight accepts.
func WeightOf(v float64) Weight {
	if v == DefaultWeight {
		return Weight{}
	}
	return Weight{v: v, set: true}
}

// Value is the weight as a number.
func (w Weight) Value() float64 {
	if !w.set {
		return DefaultWeight
	}
	return w.v
}

// IsDefault reports whether w is the default weight, 1.
func (w Weight) IsDefault() bool { return !w.set }

func (w Weight) String() string { return strconv.FormatFloat(w.Value(), 'g', -1, 64) }

// CheckWeight returns an EINVALID error unless v is a weight: a finite
// number from 0 to MaxWeight.
func CheckWeight(v float64) error {
	if math.IsNaN(v) || v < 0 || v > MaxWeight {
		return Errorf(EINVALID, "weight must be a number from 0 to %d", MaxWeight)
	}
	return nil
}
