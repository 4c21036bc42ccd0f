// Package clientsuite tests the Go client (the module
// github.com/feedd/feedd/client) against the real feedd on every stack of
// the behavioural suite: the embedded default, MariaDB + Redis + RabbitMQ,
// the same with a Redis Cluster, and PostgreSQL + Redis + RabbitMQ. These tests live in the server's
// module because they need its services and test helpers, and the
// client's module depends on nothing but the standard library; the
// client's own tests (loopback servers and the examples) stay with it.
//
// The package has no code: main_test.go builds and starts feedd,
// api_test.go, stream_test.go and ops_test.go call every route through
// the client, and routes_test.go checks that every route of the server's
// table has a method.
package clientsuite
