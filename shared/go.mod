module github.com/guildsai/guilds/shared

go 1.26.8

require (
	github.com/creack/pty v1.1.24
	golang.org/x/sys v0.50.0
)
