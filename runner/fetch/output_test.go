package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pace-cli/pace/runner"
)

func TestFetchOutputDir(t *testing.T) {
	srv := serve(t, &reqRecorder{})
	dir := t.TempDir()
	e := newFetch(t, Options{OutputDir: dir, OutputName: "{/}.txt"})
	res := fetchOne(t, e, srv.URL+"/sub/page1")
	if !res.OK() || res.Stdout != nil {
		t.Fatalf("Execute: %s (stdout %v), want success and no stdout", res.Status(), res.Stdout)
	}
	want := filepath.Join(dir, "page1.txt")
	if res.HTTP.File != want || res.HTTP.Bytes != int64(len("body of /sub/page1\n")) {
		t.Errorf("HTTP.File = %q, Bytes %d; want %q, the body's length", res.HTTP.File, res.HTTP.Bytes, want)
	}
	if b, err := os.ReadFile(want); err != nil || string(b) != "body of /sub/page1\n" {
		t.Errorf("ReadFile = %q, %v; want the body", b, err)
	}
	if fi, err := os.Stat(want); err == nil && fi.Mode().Perm()&0o044 == 0 {
		t.Errorf("mode = %v, want group/other readable under the usual umask", fi.Mode())
	}

	// The default name is the sequence number; directories are made.
	e = newFetch(t, Options{OutputDir: filepath.Join(dir, "a", "b")})
	fetchSeq(t, context.Background(), e, srv.URL+"/x", 12)
	if _, err := os.Stat(filepath.Join(dir, "a", "b", "12")); err != nil {
		t.Errorf("default name: %v", err)
	}

	// A failed item writes no file.
	e = newFetch(t, Options{OutputDir: dir, OutputName: "fail-{#}"})
	srv404 := serve(t, http.NotFoundHandler())
	fetchOne(t, e, srv404.URL)
	if _, err := os.Stat(filepath.Join(dir, "fail-1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat(file of a 404) = %v, want not exist", err)
	}
}

// TestFetchOutputNameRefused: a name that leaves the output directory or
// names a directory (the output directory itself included) fails the item
// in Prepare, so nothing is sent and no file, temporary or not, appears
// anywhere.
func TestFetchOutputNameRefused(t *testing.T) {
	rec := &reqRecorder{}
	srv := serve(t, rec)
	for _, outExists := range []bool{true, false} {
		parent := t.TempDir()
		out := filepath.Join(parent, "out")
		if outExists {
			if err := os.MkdirAll(filepath.Join(out, "sub"), 0o777); err != nil {
				t.Fatal(err)
			}
		}
		names := []string{".", "./", "a/..", "a/../", "../x", "/abs", ""}
		if outExists {
			names = append(names, "sub", "sub/")
		}
		e := newFetch(t, Options{URL: srv.URL + "/{#}", OutputDir: out, OutputName: "{}"})
		for _, name := range names {
			job := runner.Job{Seq: 1, Item: name, Attempt: 1, Slot: 1}
			err := e.Prepare(&job)
			if !errors.Is(err, runner.ErrPermanent) || !strings.Contains(err.Error(), "output file") {
				t.Errorf("output dir exists %v: Prepare(name %q) = %v, want a permanent output file error", outExists, name, err)
			}
		}
		// In a pool, as pace runs them.
		done := runPool(t, runner.Options{Jobs: 2, Executor: e, Retries: 2}, names...)
		for _, r := range done {
			if r.OK() || !r.Start.IsZero() {
				t.Errorf("output dir exists %v: name %q: %s, admitted %v; want a failure before admission",
					outExists, r.Job.Item, r.Status(), !r.Start.IsZero())
			}
		}
		if files := listTree(t, parent); len(files) != 0 {
			t.Errorf("output dir exists %v: files %q left, want none", outExists, files)
		}
	}
	if n := len(rec.all()); n != 0 {
		t.Errorf("server saw %d requests, want none", n)
	}
}

// TestFetchOutputNameClash: two items whose names are one file do not
// leave one body: the later fails before it is sent, naming the job that
// has the file. A retry keeps its own name, and a job an earlier run did
// (skipped on --resume) keeps its file too. The default name, {#}, needs
// no record of the names.
func TestFetchOutputNameClash(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		n := seen[r.URL.Path]
		mu.Unlock()
		if r.URL.Path == "/c/other" && n == 1 {
			w.WriteHeader(http.StatusInternalServerError) // retried, under the same name
			return
		}
		fmt.Fprintf(w, "body of %s\n", r.URL.Path)
	}))
	dir := t.TempDir()
	e := newFetch(t, Options{OutputDir: dir, OutputName: "{/}.html"})
	done := runPool(t, runner.Options{Jobs: 1, Executor: e, Retries: 2}, srv.URL+"/a/index", srv.URL+"/b/index", srv.URL+"/c/other")
	for _, r := range done {
		switch r.Job.Seq {
		case 2:
			if r.OK() || !r.Start.IsZero() || r.Err == nil || !strings.Contains(r.Err.Error(), "index.html is job 1's too") {
				t.Errorf("job 2: %s (%v), admitted %v; want a failure before admission naming job 1", r.Status(), r.Err, !r.Start.IsZero())
			}
		default:
			if !r.OK() {
				t.Errorf("job %d: %s (%v), want success", r.Job.Seq, r.Status(), r.Err)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "index.html")); string(b) != "body of /a/index\n" {
		t.Errorf("index.html = %q, want job 1's body", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "other.html")); string(b) != "body of /c/other\n" {
		t.Errorf("other.html = %q, want job 3's body after its retry", b)
	}
	if seen["/b/index"] != 0 {
		t.Errorf("the server saw /b/index %d times, want never", seen["/b/index"])
	}

	// On --resume, the file of a job done before is kept.
	e = newFetch(t, Options{OutputDir: dir, OutputName: "{/}.html"})
	e.Skipped(&runner.Job{Seq: 1, Item: srv.URL + "/a/index"})
	job := runner.Job{Seq: 2, Item: srv.URL + "/b/index", Attempt: 1, Slot: 1}
	if err := e.Prepare(&job); err == nil || !strings.Contains(err.Error(), "job 1's too") {
		t.Errorf("Prepare after job 1 was skipped = %v, want its file refused", err)
	}

	for name, kept := range map[string]bool{"": false, "{#}": false, "page-{#}.html": false, "{#}/../x": true, "{/}": true, "{#}-{%}": true} {
		if e := newFetch(t, Options{OutputDir: dir, OutputName: name}); (e.names != nil) != kept {
			t.Errorf("--output-name %q: names recorded %v, want %v", name, e.names != nil, kept)
		}
	}
}

// TestFetchOutputLocalErrorIsPermanent: when the body cannot be written
// here, the item fails for good, so the pool does not fetch it again, and
// nothing is left behind.
func TestFetchOutputLocalErrorIsPermanent(t *testing.T) {
	rec := &reqRecorder{}
	srv := serve(t, rec)
	type setup func(t *testing.T, parent string) (outDir string)
	tests := []struct {
		name  string
		setup setup
	}{
		{"file where the output dir should be", func(t *testing.T, parent string) string {
			f := filepath.Join(parent, "out")
			if err := os.WriteFile(f, []byte("not a dir"), 0o644); err != nil {
				t.Fatal(err)
			}
			return f
		}},
		{"file where a parent of the output dir should be", func(t *testing.T, parent string) string {
			f := filepath.Join(parent, "out")
			if err := os.WriteFile(f, []byte("not a dir"), 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(f, "deeper")
		}},
		{"read-only output dir", func(t *testing.T, parent string) string {
			if os.Geteuid() == 0 {
				t.Skip("root writes to read-only directories")
			}
			d := filepath.Join(parent, "out")
			if err := os.Mkdir(d, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(d, 0o755) })
			return d
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			out := tt.setup(t, parent)
			before := listTree(t, parent)
			requests := len(rec.all())
			e := newFetch(t, Options{OutputDir: out})
			done := runPool(t, runner.Options{Jobs: 1, Executor: e, Retries: 3}, srv.URL+"/x")
			if len(done) != 1 {
				t.Fatalf("%d results, want 1", len(done))
			}
			r := done[0]
			if r.OK() || !errors.Is(r.Err, runner.ErrPermanent) || r.HTTP.File != "" {
				t.Errorf("%s, permanent %v, File %q; want a permanent failure, no file", r.Status(), errors.Is(r.Err, runner.ErrPermanent), r.HTTP.File)
			}
			if n := len(rec.all()) - requests; n != 1 {
				t.Errorf("server saw %d requests, want 1 (not fetched again)", n)
			}
			if after := listTree(t, parent); !slices.Equal(after, before) {
				t.Errorf("files %q after, want %q as before", after, before)
			}
		})
	}
}

// bodyStarted wraps a transport: started is closed once the first bytes
// of a response body have been read.
type bodyStarted struct {
	http.RoundTripper
	once    sync.Once
	started chan struct{}
}

func (b *bodyStarted) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.RoundTripper.RoundTrip(req)
	if err == nil {
		resp.Body = &signalBody{ReadCloser: resp.Body, first: func() { b.once.Do(func() { close(b.started) }) }}
	}
	return resp, err
}

type signalBody struct {
	io.ReadCloser
	first func()
}

func (s *signalBody) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	if n > 0 {
		s.first()
	}
	return n, err
}

// streamer answers with part, then, once release is closed, the rest; or
// cuts the connection instead when cut is set.
func streamer(part, rest []byte, release <-chan struct{}, cut bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", itoa(int64(len(part)+len(rest))))
		w.Write(part)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		if cut {
			panic(http.ErrAbortHandler) // closes the connection mid-body
		}
		w.Write(rest)
	})
}

// TestFetchOutputFileIsAtomic: with OutputFile the body goes to a
// temporary file beside it and replaces the file only once complete; a
// body cut short leaves the old file and no temporary file.
func TestFetchOutputFileIsAtomic(t *testing.T) {
	part, rest := bytes.Repeat([]byte("n"), 1000), bytes.Repeat([]byte("N"), 64<<10)
	for _, cut := range []bool{false, true} {
		release := make(chan struct{})
		srv := serve(t, streamer(part, rest, release, cut))
		dir := t.TempDir()
		path := filepath.Join(dir, "out.bin")
		if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		client := NewClient(ClientOptions{})
		watch := &bodyStarted{RoundTripper: client.Transport, started: make(chan struct{})}
		client.Transport = watch
		e := newFetch(t, Options{Client: client, URL: srv.URL + "/{}", OutputFile: path})
		resc := make(chan *runner.Result, 1)
		go func() {
			job := runner.Job{Seq: 1, Item: "one", Attempt: 1, Slot: 1}
			if err := e.Prepare(&job); err != nil {
				t.Errorf("Prepare: %v", err)
			}
			resc <- e.Execute(context.Background(), &job)
		}()
		<-watch.started
		// Half way: the old file is whole, the new body goes elsewhere.
		if b, err := os.ReadFile(path); err != nil || string(b) != "old" {
			t.Errorf("cut %v: while the body arrives, the file holds %q (%v), want %q", cut, b, err, "old")
		}
		// The temporary file has no name where the system allows it
		// (Linux), so that a pace killed now leaves nothing behind.
		entries, _ := os.ReadDir(dir)
		if len(entries) == 0 || len(entries) > 2 || entries[len(entries)-1].Name() != "out.bin" ||
			len(entries) == 2 && !strings.HasPrefix(entries[0].Name(), ".out.bin.pace-") {
			t.Errorf("cut %v: while the body arrives, the directory holds %v, want out.bin and at most its temporary file", cut, entries)
		}
		close(release)
		res := <-resc
		res.Close()
		want := "old"
		if !cut {
			want = string(part) + string(rest)
			if !res.OK() || res.HTTP.File != path || res.HTTP.Bytes != int64(len(want)) || res.Stdout != nil {
				t.Errorf("Execute: %s, File %q, %d bytes; want ok, %q, %d bytes, no stdout", res.Status(), res.HTTP.File, res.HTTP.Bytes, path, len(want))
			}
		} else if res.OK() || errors.Is(res.Err, runner.ErrPermanent) {
			t.Errorf("cut body: %s, want a failure worth a retry", res.Status())
		}
		if b, _ := os.ReadFile(path); string(b) != want {
			t.Errorf("cut %v: file holds %d bytes, want %d", cut, len(b), len(want))
		}
		if files := listTree(t, dir); !slices.Equal(files, []string{"out.bin"}) {
			t.Errorf("cut %v: directory holds %q, want only out.bin", cut, files)
		}
	}
}

// TestFetchOutputDirInterrupted: a body cut short by cancellation leaves
// neither the file nor a temporary file behind.
func TestFetchOutputDirInterrupted(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := serve(t, streamer(bytes.Repeat([]byte("x"), 64<<10), []byte("y"), release, false))
	dir := t.TempDir()
	client := NewClient(ClientOptions{})
	watch := &bodyStarted{RoundTripper: client.Transport, started: make(chan struct{})}
	client.Transport = watch
	e := newFetch(t, Options{Client: client, OutputDir: dir})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-watch.started; cancel() }()
	res := fetchSeq(t, ctx, e, srv.URL, 1)
	if res.OK() || res.Err == nil {
		t.Fatalf("Execute = %s, want a failure", res.Status())
	}
	if files := listTree(t, dir); len(files) != 0 {
		t.Errorf("output directory holds %q, want nothing", files)
	}
}

// TestFetchOutputNameTooLong: an item whose --output-name has a part
// longer than a file name can be (255 bytes) fails alone, before it is
// sent; the items after it are fetched. It used to spend its call, then
// fail as a local write error, which stops the run as a full disk does.
func TestFetchOutputNameTooLong(t *testing.T) {
	rec := &reqRecorder{}
	srv := serve(t, rec)
	out := t.TempDir()
	long := strings.Repeat("a", 256)
	e := newFetch(t, Options{URL: srv.URL + "/{}", OutputDir: out, OutputName: "{}"})
	done := runPool(t, runner.Options{Jobs: 1, Executor: e}, "b", long, "sub/"+long, "c")
	for _, r := range done {
		if wantOK := len(r.Job.Item) < 255; r.OK() != wantOK || !wantOK && !r.Start.IsZero() {
			t.Errorf("item %.10q: %s, admitted %v; want ok %v, and a failure before admission", r.Job.Item, r.Status(), !r.Start.IsZero(), wantOK)
		}
	}
	if n := len(rec.all()); n != 2 {
		t.Errorf("server saw %d requests, want 2 (b and c)", n)
	}
	if got, want := listTree(t, out), []string{"b", "c"}; !slices.Equal(got, want) {
		t.Errorf("output dir holds %q, want %q", got, want)
	}
}

// TestFetchOutputNameFileAndDir: items whose names make one a file and
// the other a directory (b, then b/x; a site's /docs and /docs/intro)
// fail the later one alone, before it is sent when its clash is there
// to see, at its write when the other's file came meanwhile; the run
// goes on. It used to fail as a full disk does, which stops the run.
func TestFetchOutputNameFileAndDir(t *testing.T) {
	rec := &reqRecorder{}
	srv := serve(t, rec)
	out := t.TempDir()
	e := newFetch(t, Options{URL: srv.URL + "/{}", OutputDir: out, OutputName: "{}"})
	done := runPool(t, runner.Options{Jobs: 1, Executor: e}, "b", "b/x", "c")
	for _, r := range done {
		if wantOK := r.Job.Item != "b/x"; r.OK() != wantOK || !wantOK && !r.Start.IsZero() {
			t.Errorf("item %q: %s, admitted %v; want ok %v, and a failure before admission", r.Job.Item, r.Status(), !r.Start.IsZero(), wantOK)
		}
	}
	if n := len(rec.all()); n != 2 {
		t.Errorf("server saw %d requests, want 2 (b and c)", n)
	}

	// The clash found at the write: a failure of the item, not a local
	// write error that stops the run.
	for _, tc := range []struct{ make, write string }{{"d", "d/x"}, {"e/x", "e"}} {
		at := filepath.Join(out, tc.make)
		if err := os.MkdirAll(filepath.Dir(at), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(at, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := e.writeFile(t.Context(), filepath.Join(out, tc.write), strings.NewReader("body"))
		if err == nil || errors.Is(err, runner.ErrOutput) || !errors.Is(err, runner.ErrPermanent) {
			t.Errorf("writeFile(%s) with %s there = %v; want a permanent error that is not ErrOutput", tc.write, tc.make, err)
		}
	}
}
