module github.com/guildsai/guilds/helpers/guilds-code

go 1.26.8

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/guildsai/guilds/shared v0.0.0
	github.com/rogpeppe/go-internal v1.16.0
	github.com/smacker/go-tree-sitter v0.0.0-20240827094217-dd81d9e9be82
	golang.org/x/sys v0.50.0
)

require (
	github.com/creack/pty v1.1.24 // indirect
	golang.org/x/tools v0.26.0 // indirect
)

replace github.com/guildsai/guilds/shared => ../../shared
