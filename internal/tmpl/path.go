package tmpl

import "strings"

// trimExt removes the last extension: a '.' followed by anything but '.'
// and '/' up to the end, as GNU parallel's s:\.[^/.]*$::.
func trimExt(s string) string {
	i := strings.LastIndexAny(s, "./")
	if i < 0 || s[i] != '.' {
		return s
	}
	return s[:i]
}

// basename removes everything up to the last '/', as GNU parallel's
// s:^.*/::.
func basename(s string) string {
	return s[strings.LastIndexByte(s, '/')+1:]
}

// dirname returns the directory part of s as Perl's File::Basename
// dirname does, which GNU parallel uses for {//}: "a/b" -> "a", "b" ->
// ".", "/a" -> "/", "a/b/" -> "a", "/" -> "/".
func dirname(s string) string {
	base, dir := fileparse(s)
	dir = stripTrailingSep(dir)
	if base == "" {
		_, dir = fileparse(dir)
		dir = stripTrailingSep(dir)
	}
	return dir
}

// fileparse splits s after its last '/'; the directory is "./" if there
// is none.
func fileparse(s string) (base, dir string) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return s, "./"
	}
	return s[i+1:], s[:i+1]
}

// stripTrailingSep removes trailing slashes but keeps the first character.
func stripTrailingSep(s string) string {
	if s == "" {
		return s
	}
	end := len(s)
	for end > 1 && s[end-1] == '/' {
		end--
	}
	return s[:end]
}
