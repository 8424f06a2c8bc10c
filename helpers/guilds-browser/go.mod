module github.com/guildsai/guilds/helpers/guilds-browser

go 1.26.8

require (
	github.com/guildsai/guilds/shared v0.0.0
	github.com/mxschmitt/playwright-go v0.6401.0
	github.com/rogpeppe/go-internal v1.16.0
)

require (
	github.com/deckarep/golang-set/v2 v2.8.0 // indirect
	github.com/go-stack/stack v1.8.1 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)

replace github.com/guildsai/guilds/shared => ../../shared
