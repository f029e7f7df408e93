package throttle

// WindowKinds reports how each rule of l is kept: "log" or "counter".
func WindowKinds(l *Limiter) []string {
	var kinds []string
	for _, w := range l.windows {
		switch w.(type) {
		case *slidingCounter:
			kinds = append(kinds, "counter")
		default:
			kinds = append(kinds, "log")
		}
	}
	return kinds
}

// The schedule's building blocks, for the property tests.
var (
	Schedule      = schedule
	ScheduleCosts = scheduleCosts
	Fastest       = fastest
)
