package report

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// exactQuantile is the nearest-rank quantile of sorted samples.
func exactQuantile(sorted []time.Duration, q float64) time.Duration {
	rank := max(int(math.Ceil(q*float64(len(sorted)))), 1)
	return sorted[rank-1]
}

func TestHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		gen  func() time.Duration
	}{
		{"constant", func() time.Duration { return 1234567 }},
		{"uniform 0-10ms", func() time.Duration { return time.Duration(rng.Int64N(int64(10 * time.Millisecond))) }},
		{"log-normal around 2ms", func() time.Duration {
			return time.Duration(math.Exp(rng.NormFloat64()*0.8) * float64(2*time.Millisecond))
		}},
		{"bimodal with a slow tail", func() time.Duration {
			if rng.IntN(100) == 0 {
				return time.Duration(rng.Int64N(int64(time.Second)))
			}
			return time.Duration(200*time.Microsecond) + time.Duration(rng.Int64N(int64(50*time.Microsecond)))
		}},
		{"tiny values, exact buckets", func() time.Duration { return time.Duration(rng.IntN(200)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Histogram
			samples := make([]time.Duration, 20000)
			for i := range samples {
				samples[i] = tc.gen()
				h.Record(samples[i])
			}
			slices.Sort(samples)
			if h.Count() != uint64(len(samples)) {
				t.Fatalf("Count = %d; want %d", h.Count(), len(samples))
			}
			if h.Min() != samples[0] || h.Max() != samples[len(samples)-1] {
				t.Fatalf("min/max = %v/%v; want %v/%v", h.Min(), h.Max(), samples[0], samples[len(samples)-1])
			}
			for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.99, 0.999, 1} {
				got, want := h.Quantile(q), exactQuantile(samples, q)
				// Within half a bucket: 1/256 of the value, or 1 ns for the
				// exact buckets below 256 ns.
				tol := max(float64(want)/256, 1)
				if math.Abs(float64(got-want)) > tol {
					t.Errorf("Quantile(%v) = %v; want %v within %.0f ns", q, got, want, tol)
				}
			}
			var sum float64
			for _, s := range samples {
				sum += float64(s)
			}
			if mean := sum / float64(len(samples)); math.Abs(float64(h.Mean())-mean) > 1 {
				t.Errorf("Mean = %v; want %v", h.Mean(), time.Duration(mean))
			}
		})
	}
}

func TestHistogramEmptyAndMerge(t *testing.T) {
	var empty Histogram
	if empty.Quantile(0.99) != 0 || empty.Mean() != 0 || empty.Bins(10) != nil {
		t.Fatal("empty histogram: want zeros and no bins")
	}
	var a, b, all Histogram
	for i := range 1000 {
		d := time.Duration(i) * time.Microsecond
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(&b)
	a.Merge(&empty)
	for _, q := range []float64{0.5, 0.99} {
		if a.Quantile(q) != all.Quantile(q) {
			t.Errorf("merged Quantile(%v) = %v; want %v", q, a.Quantile(q), all.Quantile(q))
		}
	}
	if a.Count() != all.Count() || a.Min() != all.Min() || a.Max() != all.Max() {
		t.Errorf("merged count/min/max = %d/%v/%v; want %d/%v/%v", a.Count(), a.Min(), a.Max(), all.Count(), all.Min(), all.Max())
	}
	var neg Histogram
	neg.Record(-5)
	if neg.Min() != 0 {
		t.Errorf("a negative duration recorded as %v; want 0", neg.Min())
	}
}

func TestHistogramBucketsCoverInt64(t *testing.T) {
	for _, v := range []int64{0, 1, 255, 256, 257, 511, 512, 1 << 40, math.MaxInt64} {
		i := bucketOf(v)
		lo, hi := bucketBounds(i)
		if i < 0 || i >= histBuckets || v < lo || v > hi {
			t.Errorf("value %d in bucket %d [%d, %d]", v, i, lo, hi)
		}
	}
	// Buckets tile the line: each starts right after the previous ends.
	for i := 1; i < histBuckets; i++ {
		_, prevHi := bucketBounds(i - 1)
		lo, _ := bucketBounds(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d; previous ends at %d", i, lo, prevHi)
		}
	}
}

// TestHistogramBins: a log-uniform sample fills log bins evenly, and the
// bins hold every sample.
func TestHistogramBins(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h Histogram
	const n = 200_000
	for range n {
		// 10 µs to 10 ms, uniform in log.
		h.Record(time.Duration(math.Pow(10, 4+3*rng.Float64())))
	}
	bins := h.Bins(10)
	var total uint64
	for i, b := range bins {
		total += b.Count
		if i > 0 && math.Abs(b.LoMS-bins[i-1].HiMS) > 1e-12 {
			t.Fatalf("bin %d starts at %v; previous ends at %v", i, b.LoMS, bins[i-1].HiMS)
		}
	}
	if total != n {
		t.Fatalf("bins hold %d samples; want %d", total, n)
	}
	for _, b := range bins {
		if b.LoMS >= 0.0105 && b.HiMS <= 9.5 {
			if share := float64(b.Count) / n; share < 0.025 || share > 0.04 {
				t.Errorf("bin [%.4f, %.4f) ms holds %.3f of the samples; want about 1/30", b.LoMS, b.HiMS, share)
			}
		}
	}
}

// BenchmarkHistogram: recording must be cheap next to what it times, and
// reading a percentile fast enough to do per report.
func BenchmarkHistogram(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	vals := make([]time.Duration, 4096)
	for i := range vals {
		vals[i] = time.Duration(math.Exp(rng.NormFloat64()) * float64(time.Millisecond))
	}
	b.Run("record", func(b *testing.B) {
		var h Histogram
		i := 0
		for b.Loop() {
			h.Record(vals[i&4095])
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrecords/s")
	})
	b.Run("quantile", func(b *testing.B) {
		var h Histogram
		for _, v := range vals {
			h.Record(v)
		}
		for b.Loop() {
			_ = h.Quantile(0.99)
		}
	})
	b.Run("merge", func(b *testing.B) {
		var h, o Histogram
		for _, v := range vals {
			o.Record(v)
		}
		for b.Loop() {
			h.Merge(&o)
		}
	})
	// The baseline: what exact percentiles cost by sorting every sample.
	b.Run("baseline=sort-4096", func(b *testing.B) {
		s := make([]time.Duration, len(vals))
		for b.Loop() {
			copy(s, vals)
			slices.Sort(s)
			_ = s[len(s)*99/100]
		}
	})
}
