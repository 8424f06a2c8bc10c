module github.com/guildsai/guilds/helpers/guilds-git-credential

go 1.26.8

require github.com/guildsai/guilds/shared v0.0.0

require (
	github.com/rogpeppe/go-internal v1.16.0
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)

replace github.com/guildsai/guilds/shared => ../../shared
