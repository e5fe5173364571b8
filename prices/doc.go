// Package prices turns token usage into dollars: a dated table of per-model list prices
// (USD per million tokens for input, output, cache reads and cache writes), embedded in the
// binary and overridable with a file.
//
// A cost is known only when every model call it sums has a price: a model the table does
// not list has an unknown cost (nil), never 0. Print the table's Date beside any cost.
package prices
