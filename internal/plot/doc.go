// Package plot draws a rate-limited run as one self-contained SVG picture:
// per rule, how full its window was over time as a fraction of its limit,
// with the 100% line the run must never cross; every call as a tick
// coloured by its outcome; the calls in flight; and the server's pauses.
//
// Render is the entry point; Occupancy exposes the exact window occupancy
// that the picture draws. The package knows nothing of job logs, files or
// commands: the caller turns its records into Rules, Calls and Pauses.
//
// # Binning
//
// The picture stays small for any number of calls. Time is cut into one
// bin per horizontal pixel of the plot area. Each occupancy and in-flight
// curve shows, per bin, the largest value the exact step function takes
// anywhere in that bin, so a breach of a rule, however brief, is never
// averaged away. Occupancy is computed exactly, with a two-pointer sweep
// over the calls sorted by start: O(n) per rule after one O(n log n) sort.
// Up to one call per four pixels each call is drawn as its own tick;
// beyond that each bin gets one stacked bar of call counts by outcome, in
// which failures, retries and 429s are never drawn thinner than 2 pixels.
// The output therefore grows with the width of the picture and the number
// of rules, not with the number of calls.
//
// # Why hand-written SVG
//
// A plotting library such as gonum.org/v1/plot was considered and
// rejected: it pulls in font, PDF and LaTeX packages for what is a few
// hundred lines of SVG. This package uses the standard library only. The
// picture has no scripts, fetches nothing and names only generic font
// families, so it displays the same offline, in a browser or an image
// viewer.
//
// # Structure
//
// Groups carry stable classes so that tests and tools can read the picture
// without comparing pixels: <g class="rule" data-rule="LABEL"> per rule,
// holding a <line class="limit-100">; <g class="axis-x">, <g class="calls">,
// <g class="inflight">, <g class="pauses"> and <g class="legend">.
package plot
