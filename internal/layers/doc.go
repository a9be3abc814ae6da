// Package layers holds the test that keeps the hexagon's arrows pointing
// inward (docs/design.md, "The shape"): it reads the module's import graph
// with `go list` and fails the build when a package imports past its layer.
package layers
