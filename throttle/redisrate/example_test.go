package redisrate_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// A fleet of processes shares one quota, "openai": at most 10 calls a
// second and 90,000 tokens a minute across all of them, and at most 4
// calls in flight. A call's cost is its estimated tokens; once the reply
// says how many it really used, Correct records that instead.
func ExampleDial() {
	rules, err := throttle.ParseRules("10/s,cost:90000/m")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	l, err := redisrate.Dial(ctx, "redis://:password@127.0.0.1:6380/0",
		redisrate.Options{Key: "openai", Rules: rules, GlobalJobs: 4})
	switch {
	case errors.Is(err, throttle.ErrBackend):
		log.Fatalf("redis unavailable: %v", err) // the message shows the URL with the password redacted
	case errors.As(err, new(*throttle.MismatchError)):
		log.Fatal(err) // another process keeps this quota with other rules
	case err != nil:
		log.Fatal(err)
	}
	defer l.Close()

	for range 3 {
		a, err := l.Admit(ctx, 1200) // estimated tokens
		if err != nil {
			log.Fatal(err) // ErrBackend: pace exits with status 3
		}
		// ... make the call; it used 950 tokens ...
		if err := a.Correct(ctx, 950); err != nil {
			log.Print(err)
		}
		a.Release()
	}
	s := l.Stats()
	fmt.Println(s.Admitted, "admitted in", s.Store.RoundTrips, "round trips")
}

func ExampleRedactURL() {
	fmt.Println(redisrate.RedactURL("rediss://pace:s3cret@redis.internal:6380/2"))
	// Output: rediss://pace:REDACTED@redis.internal:6380/2
}
