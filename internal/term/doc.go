// Package term makes untrusted text (a tape's contents, what a sandbox's command wrote) safe
// to print on a terminal.
package term
