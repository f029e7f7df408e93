//go:build !linux

package hugeheap
