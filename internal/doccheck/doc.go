// Package doccheck keeps feedd's documentation honest: its tests check
// that every relative link in the repository's Markdown files (README.md,
// docs/ and the notes kept next to the code) names a file that exists and,
// with a #fragment, a heading of that file, and that no page cites a
// document a reader of the repository cannot open. A section that moves
// then breaks the build instead of a reader's click.
//
// The package holds only tests.
package doccheck
