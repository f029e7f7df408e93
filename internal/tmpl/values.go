package tmpl

// Values are what one expansion puts in place of the placeholders.
type Values struct {
	// Item is the input item: {} and its modified forms, {len}, and the
	// argument a Command without placeholders appends.
	Item string
	// Columns are the item's columns, for {1}, {2}, ... A nil Columns
	// means the item is the only column, as when the caller has no column
	// separator; an empty non-nil one means the item has no columns.
	Columns []string
	// Seq is the job's sequence number, for {#}.
	Seq int64
	// Slot is the job's slot, for {%}.
	Slot int
}

// column returns column n (from 1), and false if there is none.
func (v *Values) column(n int) (string, bool) {
	if v.Columns == nil {
		return v.Item, n == 1
	}
	if n > len(v.Columns) {
		return "", false
	}
	return v.Columns[n-1], true
}

// numColumns returns how many columns the item has.
func (v *Values) numColumns() int {
	if v.Columns == nil {
		return 1
	}
	return len(v.Columns)
}
