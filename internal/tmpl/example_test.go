package tmpl_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pace-cli/pace/internal/tmpl"
)

func ExampleCommand() {
	c, _ := tmpl.ParseCommand([]string{"convert", "{}", "thumbs/{/.}.png"}, false)
	argv, _ := c.Expand(tmpl.Values{Item: "photos/cat.jpg"})
	fmt.Printf("%q\n", argv)

	// Without a placeholder, the item is the last argument.
	c, _ = tmpl.ParseCommand([]string{"echo"}, false)
	argv, _ = c.Expand(tmpl.Values{Item: "x; rm -rf ~"})
	fmt.Printf("%q\n", argv)
	// Output:
	// ["convert" "photos/cat.jpg" "thumbs/cat.png"]
	// ["echo" "x; rm -rf ~"]
}

func ExampleCommand_shell() {
	// Each value is quoted for where it stands in the script.
	c, _ := tmpl.ParseCommand([]string{`echo {} "{}" '{}' | wc -c`}, true)
	argv, _ := c.Expand(tmpl.Values{Item: `$(id)'s`})
	fmt.Println(argv[2])
	// Output:
	// echo '$(id)'\''s' "\$(id)'s" '$(id)'\''s' | wc -c
}

func ExampleParseCommand_refused() {
	_, err := tmpl.ParseCommand([]string{"echo `basename {}`"}, true)
	fmt.Println(err)
	fmt.Println(errors.Is(err, tmpl.ErrTemplate))
	// Output:
	// shell command "echo `basename {}`": {} is inside backquotes: use $(...) instead of backquotes
	// true
}

func ExampleTemplate() {
	t := tmpl.Parse("https://api.example.com/users/{1}/repos?page={2}")
	line := "octocat\t3"
	url, _ := t.Expand(tmpl.Values{Item: line, Columns: strings.Split(line, "\t")})
	fmt.Println(url)

	line = "octocat"
	_, err := t.Expand(tmpl.Values{Item: line, Columns: strings.Split(line, "\t")})
	fmt.Println(err)
	fmt.Println(errors.Is(err, tmpl.ErrColumn))
	// Output:
	// https://api.example.com/users/octocat/repos?page=3
	// {2}: item "octocat" has 1 column
	// true
}
