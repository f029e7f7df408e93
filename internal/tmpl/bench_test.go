package tmpl

import "testing"

func BenchmarkExpand(b *testing.B) {
	v := Values{Item: "photos/2024/cat.jpg", Seq: 12345, Slot: 3}
	b.Run("argv", func(b *testing.B) {
		c, _ := ParseCommand([]string{"convert", "{}", "-resize", "50%", "thumbs/{/.}-{#}.png"}, false)
		b.ReportAllocs()
		for b.Loop() {
			c.Expand(v)
		}
	})
	b.Run("shell", func(b *testing.B) {
		c, _ := ParseCommand([]string{`convert {} -resize 50% "thumbs/{/.}-{#}.png" 2>&1 | tee -a log`}, true)
		b.ReportAllocs()
		for b.Loop() {
			c.Expand(v)
		}
	})
	b.Run("url", func(b *testing.B) {
		t := Parse("https://api.example.com/items/{1}?page={2}")
		v := Values{Item: "abc\t7", Columns: []string{"abc", "7"}}
		b.ReportAllocs()
		for b.Loop() {
			t.Expand(v)
		}
	})
}
