module github.com/feedd/feedd/client

go 1.24
