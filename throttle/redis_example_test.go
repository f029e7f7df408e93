package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/pace-cli/pace/throttle"
	"github.com/redis/go-redis/v9"
)

// A fleet of processes shares one quota, "github-api": at most 10 calls a
// second and 5000 an hour across all of them, and at most 4 in flight.
func ExampleNewRedis() {
	opts, err := throttle.ParseRedisURL("redis://:password@127.0.0.1:6380/0")
	if err != nil {
		log.Fatal(err) // the message shows the URL with the password redacted
	}
	client := redis.NewUniversalClient(opts)
	defer client.Close()

	rules, _ := throttle.ParseRules("10/s,5000/h")
	l, err := throttle.NewRedis(client, "github-api", rules, throttle.WithGlobalJobs(4))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	for range 3 {
		release, err := l.Acquire(context.Background())
		switch {
		case errors.Is(err, throttle.ErrBackend):
			log.Fatalf("redis unavailable: %v", err) // pace exits with status 3
		case errors.Is(err, throttle.ErrRuleMismatch):
			log.Fatal(err) // another process keeps this quota with other rules
		case err != nil:
			log.Fatal(err)
		}
		// ... make the call ...
		release()
	}
	fmt.Println(l.Stats().Admitted, "admitted in", l.RoundTrips(), "round trips")
}

func ExampleRedactURL() {
	fmt.Println(throttle.RedactURL("rediss://pace:s3cret@redis.internal:6380/2"))
	// Output: rediss://pace:xxxxx@redis.internal:6380/2
}
