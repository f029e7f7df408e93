// Package held marks a context whose admission rides on an in-flight slot
// the caller already holds (backend.WithSlotHeld).
package held

import "context"

type key struct{}

// With returns a context under which Admit takes no in-flight slot.
func With(ctx context.Context) context.Context { return context.WithValue(ctx, key{}, true) }

// Slot reports whether ctx comes from With.
func Slot(ctx context.Context) bool {
	h, _ := ctx.Value(key{}).(bool)
	return h
}
