// Package feedtest holds the behavioural suites that every implementation
// of feed's shared contracts must pass: the embedded in-process default and
// the real services run the same tests, so the two cannot drift apart.
// Each suite is an exported function that an implementation's own tests
// call with a constructor; TestCache's behaviours are one function each
// (cache.go, cacheposts.go, cachemodel.go, their checks in cachecheck.go).
// missing.go holds what a test does when a service it needs is not there
// (Missing, RequireServices) and the line that sums those skips up (Main).
package feedtest
