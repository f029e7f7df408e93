package plot_test

import (
	"bufio"
	"bytes"
	"fmt"
	"time"

	"github.com/pace-cli/pace/internal/plot"
)

func ExampleOccupancy() {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	calls := []plot.Call{
		{Start: start},
		{Start: start.Add(200 * time.Millisecond)},
		{Start: start.Add(1200 * time.Millisecond)}, // enters as the second leaves
	}
	for _, s := range plot.Occupancy(plot.Rule{N: 2, Window: time.Second}, calls) {
		fmt.Printf("from %v: %d in the window, %.0f%% of the limit\n", s.At.Sub(start), s.Used, 100*s.Fraction)
	}
	// Output:
	// from 0s: 1 in the window, 50% of the limit
	// from 200ms: 2 in the window, 100% of the limit
	// from 1s: 1 in the window, 50% of the limit
	// from 2.2s: 0 in the window, 0% of the limit
}

func ExampleRender() {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	rules := []plot.Rule{
		{N: 5, Window: time.Second, Label: "5/s"},
		{N: 100, Window: time.Second, Cost: true, Label: "cost:100/s"},
	}
	var calls []plot.Call
	for k := range 20 {
		calls = append(calls, plot.Call{
			Start:   start.Add(time.Duration(k/5) * time.Second),
			Runtime: 300 * time.Millisecond,
			Cost:    10,
		})
	}
	calls[7].Outcome = plot.Refused
	pauses := []plot.Pause{{From: start.Add(1500 * time.Millisecond), To: start.Add(2 * time.Second)}}

	var svg bytes.Buffer // a file, in practice
	if err := plot.Render(&svg, rules, calls, pauses, plot.Options{Title: "20 calls"}); err != nil {
		fmt.Println(err)
		return
	}
	first, _ := bufio.NewReader(&svg).ReadString('\n')
	fmt.Print(first)
	// Output:
	// <svg xmlns="http://www.w3.org/2000/svg" width="1000" height="600" viewBox="0 0 1000 600" font-family="sans-serif" font-size="11">
}
