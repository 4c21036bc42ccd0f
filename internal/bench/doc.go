// Package bench is the home of feedd bench, the load tool that ships in
// feedd's own binary so that it can start feedd itself for each timeline
// model (cmd/feedd/bench.go parses its flags; docs/BENCH.md explains its
// figures). It holds no code of its own; the tool is cut by concern:
//
//   - graph plans a synthetic social graph, writes it into the SQL store in
//     bulk (bench graph), and describes it in a manifest;
//   - load starts feedd per model and drives the scenarios against it and
//     against the raw Redis and HTTP baselines (bench run), and serves the
//     HTTP floor (bench floor);
//   - report holds the figures of a run and writes them as JSON, a table
//     and an HTML page.
//
// load reads graph's manifest and fills report's results; report depends
// on neither. The progress bars are package progress's, which feedd
// import draws too.
package bench
