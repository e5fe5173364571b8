// Package term makes untrusted text (a tape's contents, what a sandbox's command wrote) safe
// to print on a terminal: Printable for one string, Writer for everything a program prints
// (the command line wraps its standard output and error in one), FirstControl for tests.
package term
