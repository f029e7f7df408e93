package redact

import (
	"net/url"
	"testing"
)

func TestRawURLPathTokens(t *testing.T) {
	checkRawURL(t, nil, []struct{ in, want string }{
		// Telegram: the token after the bot's id.
		{"https://api.telegram.org/bot123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11/sendMessage",
			"https://api.telegram.org/bot123456:REDACTED/sendMessage"},
		{"https://api.telegram.org/file/bot123456:ABC-DEF_xyz/photos/file_1.jpg",
			"https://api.telegram.org/file/bot123456:REDACTED/photos/file_1.jpg"},
		{"https://api.telegram.org/bot123456:ABC?chat_id=1", "https://api.telegram.org/bot123456:REDACTED?chat_id=1"},
		{"https://api.telegram.org/bot123456:REDACTED/getMe", "https://api.telegram.org/bot123456:REDACTED/getMe"},
		{"https://example.com/bots/about", "https://example.com/bots/about"},
		{"https://example.com/bot:x/about", "https://example.com/bot:x/about"},
		// Slack incoming webhooks, workflows and triggers.
		{"https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
			"https://hooks.slack.com/services/T00000000/B00000000/REDACTED"},
		{"https://HOOKS.SLACK.COM/services/T0/B0/abc/", "https://HOOKS.SLACK.COM/services/T0/B0/REDACTED/"},
		{"https://hooks.slack.com/workflows/T0/A0/123/abcdef", "https://hooks.slack.com/workflows/T0/A0/REDACTED/REDACTED"},
		{"https://hooks.slack.com/triggers/T0/123/abcdef", "https://hooks.slack.com/triggers/T0/123/REDACTED"},
		{"https://hooks.slack.com/services/T0/B0", "https://hooks.slack.com/services/T0/B0"},
		// A relay with the same shape, on another host.
		{"https://relay.example/services/T0ABCDE/B0ABCDE/sekrit", "https://relay.example/services/T0ABCDE/B0ABCDE/REDACTED"},
		{"https://example.com/services/web/blog/post", "https://example.com/services/web/blog/post"},
		// Discord webhooks, with or without an API version.
		{"https://discord.com/api/webhooks/123456789012345678/AbC-dEf_123", "https://discord.com/api/webhooks/123456789012345678/REDACTED"},
		{"https://discord.com/api/v10/webhooks/1234/tok/slack?wait=true", "https://discord.com/api/v10/webhooks/1234/REDACTED/slack?wait=true"},
		{"https://example.com/docs/webhooks/intro/setup", "https://example.com/docs/webhooks/intro/setup"},
		// IFTTT's Webhooks service.
		{"https://maker.ifttt.com/trigger/door/with/key/dE3fG4hI", "https://maker.ifttt.com/trigger/door/with/key/REDACTED"},
		{"https://maker.ifttt.com/trigger/door/json/with/key/dE3fG4hI?value1=x", "https://maker.ifttt.com/trigger/door/json/with/key/REDACTED?value1=x"},
		// Microsoft Teams incoming webhooks.
		{"https://acme.webhook.office.com/webhookb2/a-b@c-d/IncomingWebhook/0123abcd/e-f-g",
			"https://acme.webhook.office.com/webhookb2/a-b@c-d/IncomingWebhook/REDACTED/REDACTED"},
		// Zapier catch hooks and Mattermost incoming webhooks.
		{"https://hooks.zapier.com/hooks/catch/123456/abcdef/", "https://hooks.zapier.com/hooks/catch/123456/REDACTED/"},
		{"https://chat.example.com/hooks/xi3ukpyq1fbymgcndqx7ewwa5y", "https://chat.example.com/hooks/REDACTED"},
		{"https://api.github.com/repos/o/r/hooks/12345", "https://api.github.com/repos/o/r/hooks/12345"},
		// Tokens in the path and credentials elsewhere.
		{"https://u:pw@discord.com/api/webhooks/1/tok?token=x", "https://u:REDACTED@discord.com/api/webhooks/1/REDACTED?token=REDACTED"},
		// In a fragment, a path is not a request path.
		{"https://h/#/bot1:abc", "https://h/#/bot1:abc"},
	})
}

func TestTextPathTokens(t *testing.T) {
	in := `Post "https://hooks.slack.com/services/T0/B0/sekrit": dial tcp: i/o timeout`
	want := `Post "https://hooks.slack.com/services/T0/B0/REDACTED": dial tcp: i/o timeout`
	if got := New().Text(in); got != want {
		t.Errorf("Text(%q) = %q, want %q", in, got, want)
	}
}

// TestAddURLPathTokens: a token in a URL's path becomes a known secret,
// hidden wherever it appears later.
func TestAddURLPathTokens(t *testing.T) {
	u, err := url.Parse("https://api.telegram.org/bot42:sekrit-token/getMe")
	if err != nil {
		t.Fatal(err)
	}
	r := New()
	r.AddURL(u)
	if got := r.String("token sekrit-token refused"); got != "token REDACTED refused" {
		t.Errorf("after AddURL, String = %q", got)
	}
}
