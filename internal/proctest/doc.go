// Package proctest runs the real feedd binary as separate operating-system
// processes — migrate, serve and work — against MariaDB or PostgreSQL,
// Redis and RabbitMQ, and checks what an operator relies on when processes die or
// are stopped: SIGKILL of a worker loses no fan-out, SIGTERM drains, the
// configuration contract holds, and several serve and work processes
// share one set of services. The proofs that feedd survives a bad day live
// here too: chaos (kills, a broker cut, a Redis flush and a serve restart
// during a big fan-out) and the broker and Redis outages, made by cutting
// a testproxy between the processes and the service, never by stopping
// the shared service. Those run on MariaDB and on PostgreSQL, as subtests
// named after the backend (-run '/postgres'). A PostgreSQL crash is made
// on a server of the test's own (initdb and pg_ctl in a temporary
// directory), never on the shared one, and a RabbitMQ node is killed in a
// three-node cluster of the test's own (.ci/rabbitmq-cluster.sh,
// FEEDD_TEST_AMQP_CLUSTER_URL), never the shared broker.
//
// The package holds only tests. It builds cmd/feedd once per test binary
// and starts it with exec, so it sees what a deployment sees: exit
// statuses, signals, printed output and real sockets. Each test creates
// its own database, Redis key prefix (in Redis database 4) and queue
// prefix, and removes them when it ends. Without the services a test
// skips loudly; with CI=true it fails. FEEDD_TEST_MYSQL_DSN,
// FEEDD_TEST_POSTGRES_DSN, FEEDD_TEST_PROC_REDIS_URL and
// FEEDD_TEST_AMQP_URL override the loopback defaults, and
// FEEDD_TEST_POSTGRES_BIN the directory of initdb and pg_ctl.
package proctest
