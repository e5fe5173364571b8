//go:build unix && !linux

package dataset

const mapPopulate = 0
