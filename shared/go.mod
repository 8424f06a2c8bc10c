module github.com/guildsai/guilds/shared

go 1.26.8
