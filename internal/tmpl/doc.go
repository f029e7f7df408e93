// Package tmpl expands pace's placeholder templates: the command run for
// each item, and the URL, header, body and file-name templates of fetches.
//
// # Placeholders
//
// The placeholders have GNU parallel's meanings:
//
//	{}     the item
//	{.}    the item without its extension: dir/a.tar.gz -> dir/a.tar
//	{/}    the item's basename: dir/a.tar.gz -> a.tar.gz
//	{//}   the item's dirname: dir/a.tar.gz -> dir, a.txt -> .
//	{/.}   the basename without extension: dir/a.tar.gz -> a.tar
//	{#}    the job's sequence number, from 1
//	{%}    the job slot, 1..jobs
//	{N}    column N of the item, from 1: {1}, {2}, ...
//	{N.}   column N without its extension; likewise {N/}, {N//}, {N/.}
//	{len}  the item's length in bytes (pace's own, for cost estimates)
//
// A column number is written without leading zeros, so {0} and {01} are
// not placeholders. Other text in braces, such as {foo}, { } or the JSON
// {"a":1}, is literal. Where the caller splits items into columns is up to
// it (see Values); without a column separator the item is the only
// column, so {1} is the item. A column placeholder that an item cannot
// fill makes that expansion fail with an error wrapping ErrColumn.
//
// # Templates
//
// Template is a single string (a URL, a header value, a body, an output
// file name, a cost expression) with placeholders. Command is a command
// and its arguments: without a shell each argument is expanded on its own
// and becomes exactly one argument, whatever the item holds; a Command
// without any placeholder gets the item appended as its last argument.
//
// # Shell mode
//
// A Command parsed in shell mode is joined with spaces into one script for
// "sh -c", and each substituted value is quoted for the place where its
// placeholder stands, so that it stays one literal word whether the
// template puts the placeholder bare, in single quotes, in double quotes,
// inside $(...) or in quotes inside ${...}. ParseCommand reads the
// template's own text with a small POSIX sh lexer to know those places, and
// refuses (with an error wrapping ErrTemplate) a template where it cannot
// quote a value safely: a placeholder inside backquotes, a comment, a
// here-document or a double-quoted ${...}, unquoted inside ${...}, right
// after a $ or a backslash, inside arithmetic (but for the numbers {#},
// {%} and {len}), or after a construct whose quoting shells disagree on;
// and a template with an unterminated quote or substitution.
//
// A Command parsed without a shell treats one argument so too: the script
// of a shell it runs as sh -c SCRIPT (bash, dash, zsh, ksh and the like,
// with options before -c), which the shell reads as code. A script that
// is a placeholder alone is left as it is: sh -c {} runs the item as code.
package tmpl
