package localstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/localstore"
)

// Every pace on a host shares one quota, "openai": at most 10 calls a
// second and 90,000 tokens a minute across all of them, and at most 4
// calls in flight. A call's cost is its estimated tokens; once the reply
// says how many it really used, Correct records that instead.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "pace-state") // usually localstore.DefaultDir()
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	rules, err := throttle.ParseRules("10/s,cost:90000/m")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	s, err := localstore.Open(ctx, localstore.Options{Dir: dir, Key: "openai", Rules: rules, GlobalJobs: 4})
	switch {
	case errors.As(err, new(*throttle.MismatchError)):
		log.Fatal(err) // another process keeps this quota with other rules
	case errors.Is(err, throttle.ErrBackend):
		log.Fatal(err) // a damaged store: the message names the file to move away
	case err != nil:
		log.Fatal(err)
	}
	defer s.Close()

	for range 3 {
		a, err := s.Admit(ctx, 1200) // estimated tokens
		if err != nil {
			log.Fatal(err)
		}
		// ... make the call; it used 950 tokens ...
		if err := a.Correct(ctx, 950); err != nil {
			log.Print(err)
		}
		a.Release()
	}
	st := s.Stats()
	fmt.Println(st.Admitted, "admitted;", st.Rules[1].Used, "tokens in the last minute")

	q, err := localstore.Inspect(dir, "openai")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s\n", q.Key, q.Spec)
	for _, r := range q.Rules {
		fmt.Printf("  %-12s %d used\n", r.Rule, r.Used)
	}
	// Output:
	// 3 admitted; 2850 tokens in the last minute
	// openai: 10/s,cost:90000/m global-jobs=4
	//   10/s         3 used
	//   cost:90000/m 2850 used
}
