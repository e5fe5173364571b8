// Package action holds the things a tool call can do in the sandbox, as plain Go functions
// with typed inputs and outputs: Shell, background Tasks (TaskOutput), ReadFile, WriteFile,
// EditFile, Glob, Grep and ApplyPatch. Noop, the replay of a recorded result, needs no
// function here: a harness module returns the recorded result itself.
//
// Actions know nothing of any harness's wording. A harness module (package
// executor/harness/...) maps a tool call to an action and formats the action's result
// the way that harness does. Errors that a harness reports to the model in its own words
// are typed (*EditError, *PatchError, ErrBinary ...) so the module can branch on them.
//
// The package imports the standard library only.
package action
