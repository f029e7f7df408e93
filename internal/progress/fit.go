package progress

import "unicode/utf8"

// The bar's width in cells, beside the status text: at most MaxBarCells,
// and at least MinBarCells as long as Fit can drop parts of the text.
const (
	MaxBarCells = 40
	MinBarCells = 10
)

// Fit returns the status text that fits in room columns beside
// overhead columns of decoration and, with a bar, the bar's cells: up to
// MaxBarCells, and at least MinBarCells as long as parts can be dropped;
// past that the text is cut with an ellipsis. ok is false when not even
// that fits.
func Fit(parts []Part, room, overhead int, bar bool) (text string, cells int, ok bool) {
	parts = append([]Part(nil), parts...)
	least := 0
	if bar {
		least = MinBarCells
	}
	for {
		text = Join(parts)
		free := room - overhead - utf8.RuneCountInString(text)
		if free >= least {
			if bar {
				cells = min(free, MaxBarCells)
			}
			return text, cells, true
		}
		worst := -1
		for i, p := range parts {
			if p.Drop > 0 && (worst < 0 || p.Drop > parts[worst].Drop) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		parts = append(parts[:worst], parts[worst+1:]...)
	}
	// Nothing more to drop: a narrower bar, then a shorter text.
	free := room - overhead - utf8.RuneCountInString(text)
	if free >= 0 {
		return text, free, true
	}
	keep := room - overhead
	if keep < 1 {
		return "", 0, false
	}
	r := []rune(text)
	return string(r[:keep-1]) + "…", 0, true
}
