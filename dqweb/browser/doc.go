// Package browser holds the dashboard's browser tests: they drive headless
// Chromium (chromedp) against dqweb and a real redis-server, with the
// fixture of dqweb/internal/webtest. It is a module of its own, which no
// one imports, so that dqweb's go.mod, and so its users' go.sum, names no
// chromedp. Run them with `go test ./...` in this directory, or from the
// repository root with scripts/test.sh.
package browser
