//go:build !unix

package jobctl

import "os"

func follow(func(os.Signal), func(func())) func() { return func() {} }
