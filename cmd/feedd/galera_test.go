package main

import (
	"testing"

	"github.com/feedd/feedd/internal/testenv"
)

// galeraServer is the three-node Galera cluster of .ci/galera.sh, which
// feedd reaches with a multi-host DSN (failover in internal/sqlstore).
var galeraServer = &sqlServer{
	variable:     mariaDB.variable,
	readVariable: mariaDB.readVariable,
	testDSN:      testenv.GaleraDSN,
	create:       func(tb testing.TB) string { return testenv.CreateGaleraDatabase(tb, "feedd_e2e_") },
	addr:         func(tb testing.TB, _ string) string { return testenv.GaleraHosts(tb)[0] },
}

// galeraEnv is the services stack on the Galera cluster, for a few of the
// behavioural tests (publish and fan-out, follow and unfollow): the whole
// suite runs on the single MariaDB, and TestGaleraFailover
// (internal/proctest) kills the cluster's nodes under load. The test
// shares the cluster with the other users of it, but not with a test that
// kills its nodes.
func galeraEnv(t *testing.T) map[string]string {
	t.Helper()
	testenv.UseGalera(t, false)
	return servicesEnv(t, galeraServer, testenv.Getenv("FEEDD_TEST_E2E_REDIS_URL", testRedis))
}
