// Package harnesstest runs an executor harness module's session on a throwaway working
// directory, for the modules' own tests: calls go in as JSON, results come back checked to
// carry the call's id. Only test code imports this package.
package harnesstest
