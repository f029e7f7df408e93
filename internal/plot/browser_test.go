package plot

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestChromium has a real browser draw a picture and checks the
// screenshot: the SVG must display, not merely parse. It needs chromium
// and is skipped without it.
func TestChromium(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a browser; skipped with -short")
	}
	browser := findChromium()
	if browser == "" {
		t.Skip("chromium not found: install it (apt-get install chromium) to run this test")
	}
	dir := t.TempDir()
	svgPath := filepath.Join(dir, "seed.svg")
	shot := filepath.Join(dir, "shot.png")
	// The seed run, with one call too many: both the 429 tick and the
	// limit line are on the picture.
	calls := append(seedCalls(), Call{Start: t0.Add(6 * time.Second)})
	if err := os.WriteFile(svgPath, render(t, seedRules, calls, seedPauses, Options{Title: seedTitle}), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"),
		"--screenshot="+shot, "--window-size=1000,600",
		"file://"+svgPath)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}

	b := img.Bounds()
	total := b.Dx() * b.Dy()
	inked := countPixels(img, b, func(r, g, b uint8) bool { return r < 240 || g < 240 || b < 240 })
	// Below the legend, which has both colours too.
	lay := newLayout(Options{}, len(seedRules), [numOutcomes]int64{})
	panels := image.Rect(0, topH, b.Max.X, b.Max.Y)
	ticks := image.Rect(0, int(lay.calls.top), b.Max.X, int(lay.calls.bottom)+1)
	refused := countPixels(img, ticks, near(outcomeColors[Refused]))
	limit := countPixels(img, panels, near(limitColor))
	t.Logf("%dx%d screenshot: %d non-white pixels, %d of the 429 colour, %d of the limit colour", b.Dx(), b.Dy(), inked, refused, limit)
	if inked < total/5 {
		t.Errorf("only %d of %d pixels are not white: the picture did not display", inked, total)
	}
	if refused < 10 {
		t.Errorf("%d pixels of the 429 colour %s in the calls panel, want the 429 tick", refused, outcomeColors[Refused])
	}
	if limit < 2*lay.plotW {
		t.Errorf("%d pixels of the limit colour %s, want the 100%% lines", limit, limitColor)
	}
}

// findChromium returns the path of a chromium binary, or "".
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// countPixels counts the pixels of img within r whose colour satisfies
// match.
func countPixels(img image.Image, r image.Rectangle, match func(r, g, b uint8) bool) int {
	n := 0
	b := r.Intersect(img.Bounds())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if match(uint8(r>>8), uint8(g>>8), uint8(bl>>8)) {
				n++
			}
		}
	}
	return n
}

// near returns a match for colours within a small distance of the colour
// "#rrggbb", allowing for anti-aliasing.
func near(hex string) func(r, g, b uint8) bool {
	var want [3]int
	for i := range want {
		v, err := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		if err != nil {
			panic("near: bad colour " + hex)
		}
		want[i] = int(v)
	}
	close := func(got uint8, want int) bool { return max(int(got)-want, want-int(got)) <= 24 }
	return func(r, g, b uint8) bool {
		return close(r, want[0]) && close(g, want[1]) && close(b, want[2])
	}
}
