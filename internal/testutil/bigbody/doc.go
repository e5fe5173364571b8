// Package bigbody makes Anthropic bodies of any size as they are read, and serves them from
// an upstream that answers with the size each request asks for, for the tests and
// benchmarks that send hundreds of megabytes through a gateway. No user needs it, so it is
// internal.
package bigbody
