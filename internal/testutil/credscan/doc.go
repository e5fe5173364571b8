// Package credscan checks, for the tests that send credentials through a gateway, that none
// of them reached a file the code under test wrote. No user needs it, so it is internal.
package credscan
