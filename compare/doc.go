// Package compare gives the verdict on a replay: Compare walks a recording and its replay
// step by step (tool calls, stop reasons, tool results with the harness's volatile fields
// masked and identifiers learned from evidence, by package match), then the end state of
// the workspace, and names the calls the executor did not run (copied from the tape). A
// Report is IDENTICAL only when every result and the end state match; WriteText prints it
// as tapebox compare does, and its JSON is compare --json's.
package compare
