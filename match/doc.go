// Package match tells what of a tool result is the run and what is the harness's per-run
// noise. Identifiers learns, from evidence only, which new identifier (a background task
// id, a session id, a path with a random part) stands for which recorded one, and
// substitutes them in texts and JSON; Mask hides the volatile fields the harness table
// (tape/harnesses) names. A replay's player and simulator use it to follow the sandbox;
// compare uses it, one to one, for the verdict.
package match
