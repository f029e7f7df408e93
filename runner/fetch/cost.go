package fetch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/pace-cli/pace/runner"
)

// CostSource says where a response tells a call's true cost: a header,
// or a path into a JSON body.
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
	return CostSource{}, fmt.Errorf("want header:NAME (such as header:X-Tokens-Used) or json:PATH (such as json:usage.total_tokens)")
}

// maxCostBody bounds how much of a body pace reads for its cost.
const maxCostBody = 16 << 20

// responseCost returns the cost resp says the call had (0 for none), from
// the header, or from the JSON body kept in body (or in the file). An
// answer that says no cost is an error.
func (e *Executor) responseCost(resp *http.Response, body *runner.Capture, file string) (int, error) {
	src := e.opts.CostFrom
	var raw string
	switch src.Kind {
	case "":
		return 0, nil
	case "header":
		raw = strings.TrimSpace(resp.Header.Get(src.Name))
		if raw == "" {
			return 0, fmt.Errorf("the response has no %s header to tell its cost", src.Name)
		}
	case "json":
		var r io.Reader
		switch {
		case file != "":
			f, err := os.Open(file)
			if err != nil {
				return 0, fmt.Errorf("read the cost: %w", err)
			}
			defer f.Close()
			r = f
		case body != nil:
			var b bytes.Buffer
			if _, err := body.WriteTo(&b); err != nil {
				return 0, fmt.Errorf("read the cost: %w", err)
			}
			r = &b
		default:
			return 0, errors.New("no body to read the cost from")
		}
		var v any
		dec := json.NewDecoder(io.LimitReader(r, maxCostBody))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return 0, fmt.Errorf("the body is not JSON, so %s cannot tell the cost", src.Name)
		}
		for _, k := range strings.Split(src.Name, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return 0, fmt.Errorf("the body has no %s to tell the cost", src.Name)
			}
			if v, ok = m[k]; !ok {
				return 0, fmt.Errorf("the body has no %s to tell the cost", src.Name)
			}
		}
		n, ok := v.(json.Number)
		if !ok {
			return 0, fmt.Errorf("%s in the body is not a number", src.Name)
		}
		raw = n.String()
	}
	c, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || c < 0 {
		return 0, fmt.Errorf("cost %q from the response is not a whole number", raw)
	}
	return int(max(c, 1)), nil
}

// BodyLen returns the length of job's request body: the expanded -d
// string, or the size of the file -d @FILE names; 0 without one.
func (e *Executor) BodyLen(job *runner.Job) (int64, error) {
	if !e.opts.HasData {
		return 0, nil
	}
	d, err := e.data.Expand(values(job))
	if err != nil {
		return 0, err
	}
	if name, ok := strings.CutPrefix(d, "@"); ok {
		fi, err := os.Stat(name)
		if err != nil {
			return 0, fmt.Errorf("data file: %w", err)
		}
		return fi.Size(), nil
	}
	return int64(len(d)), nil
}
