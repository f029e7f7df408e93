package summary

import (
	"maps"
	"strconv"

	"github.com/pace-cli/pace/runner"
)

// HTTPCounts counts pace fetch's and pace proxy's attempts as the summary
// reports them: responses by status, attempts without a response by
// cause, and the body bytes kept. The zero value counts nothing yet; it
// is not safe for concurrent use.
type HTTPCounts struct {
	statuses   map[int]int64
	noResponse int64
	conns      map[string]int64
	bytes      int64
}

// Add counts one attempt's outcome.
func (c *HTTPCounts) Add(h *runner.HTTPInfo) {
	switch {
	case h.StatusCode != 0:
		if c.statuses == nil {
			c.statuses = map[int]int64{}
		}
		c.statuses[h.StatusCode]++
	default:
		c.noResponse++
		if h.Conn != "" {
			if c.conns == nil {
				c.conns = map[string]int64{}
			}
			c.conns[h.Conn]++
		}
	}
	c.bytes += h.Bytes
}

// Fill sets s's HTTP fields to copies of the counts; s.HTTP reports that
// some attempt was an HTTP one.
func (c *HTTPCounts) Fill(s *Snapshot) {
	s.HTTP = c.statuses != nil || c.noResponse > 0
	s.NoResponse, s.Bytes, s.Statuses, s.Conns = c.noResponse, c.bytes, nil, maps.Clone(c.conns)
	if c.statuses != nil {
		s.Statuses = make(map[string]int64, len(c.statuses))
		for code, n := range c.statuses {
			s.Statuses[strconv.Itoa(code)] = n
		}
	}
}
