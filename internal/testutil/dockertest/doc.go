// Package dockertest gives tests a real Docker engine: a client, a check that an image the
// project builds is there, and throwaway containers removed when the test ends.
//
// A test that needs Docker skips with a message saying how to get an engine when none is
// reachable, unless TAPEBOX_REQUIRE_DOCKER=1 (CI sets it): then a missing engine or image is a
// failure. Only test code imports this package.
package dockertest
