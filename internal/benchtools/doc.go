// Package benchtools holds the helper programs of scripts/bench.sh:
// benchtool computes the fastest legal schedules that runs are compared
// with (from throttle's own oracle) and writes the benchmark's inputs;
// cookbook is a small client in the manner of the OpenAI cookbook's
// api_request_parallel_processor, the approach pace is compared with on
// weighted quotas. Neither is part of pace.
package benchtools
