module github.com/guildsai/guilds/shared

go 1.26.8

require (
	github.com/creack/pty v1.1.24 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
