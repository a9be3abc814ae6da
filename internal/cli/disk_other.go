//go:build !unix

package cli

import "errors"

// diskSpace is not measured on systems without statfs.
func diskSpace(string) (free, total uint64, err error) {
	return 0, 0, errors.New("free space is not measured on this system")
}
