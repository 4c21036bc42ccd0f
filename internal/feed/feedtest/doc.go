// Package feedtest holds the behavioural suites that every implementation
// of feed's shared contracts must pass: the embedded in-process default and
// the real services run the same tests, so the two cannot drift apart.
// Each suite is an exported function that an implementation's own tests
// call with a constructor.
package feedtest
