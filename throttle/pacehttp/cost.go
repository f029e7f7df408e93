package pacehttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/pace-cli/pace/throttle"
)

// CostSource says where a response tells a call's true cost: a header,
// or a path into a JSON body. The zero CostSource reads nothing.
type CostSource struct {
	Kind string // "header" or "json"; empty for none
	Name string // the header's name, or the dotted path ("usage.total_tokens")
}

// ParseCostSource reads "header:NAME" or "json:PATH".
func ParseCostSource(s string) (CostSource, error) {
	kind, name, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	switch {
	case !ok || name == "":
	case kind == "header" && isToken(name):
		return CostSource{Kind: kind, Name: http.CanonicalHeaderKey(name)}, nil
	case kind == "json" && !strings.Contains(name, "..") && !strings.HasPrefix(name, ".") && !strings.HasSuffix(name, "."):
		return CostSource{Kind: kind, Name: name}, nil
	}
	return CostSource{}, fmt.Errorf("pacehttp: cost source %q: want header:NAME (such as header:X-Tokens-Used) or json:PATH (such as json:usage.total_tokens)", s)
}

// maxCostBody bounds how much of a body is kept to read its cost.
const maxCostBody = 16 << 20

// maxCostBodies bounds how much of their bodies the responses of one
// Transport keep at once to read their costs; a variable, for tests.
var maxCostBodies int64 = 256 << 20

// errNoCost is wrapped by the errors of a response that does not say its
// cost.
var errNoCost = errors.New("no cost in the response")

// headerCost reads the cost from the header src names.
func headerCost(src CostSource, h http.Header) (int, error) {
	raw := strings.TrimSpace(h.Get(src.Name))
	if raw == "" {
		return 0, fmt.Errorf("%w: no %s header", errNoCost, src.Name)
	}
	return wholeCost(raw)
}

// jsonCost reads the cost from the JSON body at src's path.
func jsonCost(src CostSource, body []byte) (int, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return 0, fmt.Errorf("%w: the body is not JSON, so %s cannot tell the cost", errNoCost, src.Name)
	}
	for _, k := range strings.Split(src.Name, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return 0, fmt.Errorf("%w: the body has no %s", errNoCost, src.Name)
		}
		if v, ok = m[k]; !ok {
			return 0, fmt.Errorf("%w: the body has no %s", errNoCost, src.Name)
		}
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%w: %s in the body is not a number", errNoCost, src.Name)
	}
	return wholeCost(n.String())
}

// wholeCost reads a cost: a whole number, at least 1 (0 counts as 1),
// and at most throttle.MaxLimit, as a correction counts one above it: so
// does one too large for an int64.
func wholeCost(raw string) (int, error) {
	c, err := strconv.ParseInt(raw, 10, 64)
	if errors.Is(err, strconv.ErrRange) && c > 0 {
		err = nil // ParseInt returns the largest int64 with it
	}
	if err != nil || c < 0 {
		return 0, fmt.Errorf("%w: cost %q is not a whole number", errNoCost, raw)
	}
	return int(min(max(c, 1), throttle.MaxLimit)), nil
}

// isToken reports whether s is an HTTP token (RFC 9110 5.6.2), as header
// names must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
