#!/usr/bin/env bash
# Starts the SQL primary + read replica pairs the replica tests use, apart
# from the machine's own MariaDB (3306) and PostgreSQL (5432):
#   MariaDB 10.11, GTID replication (MASTER_USE_GTID=slave_pos):
#     primary 127.0.0.1:3321, replica 127.0.0.1:3322
#   PostgreSQL 15, streaming replication (pg_basebackup -R):
#     primary 127.0.0.1:5441, hot standby 127.0.0.1:5442
# Data lives under $FEEDD_CI_DIR (default /var/tmp/feedd-ci). Idempotent:
# servers that answer are left alone, stopped ones are started on their
# data, and a pair is created only if its data dirs do not exist yet.
#
#   .ci/sql-replicas.sh [mariadb|postgres|all] [start]
#       start (or repair) the pair(s); print the test variables as
#       `export NAME=value` lines (eval them):
#         FEEDD_TEST_MYSQL_REPLICATED_DSN, FEEDD_TEST_MYSQL_REPLICA_DSN,
#         FEEDD_TEST_POSTGRES_REPLICATED_DSN, FEEDD_TEST_POSTGRES_REPLICA_DSN
#   .ci/sql-replicas.sh ENGINE kill-replica    SIGKILL the replica server
#   .ci/sql-replicas.sh ENGINE start-replica   start it again and wait for it
#   .ci/sql-replicas.sh ENGINE stop            stop both servers (data kept)
set -euo pipefail

root="${FEEDD_CI_DIR:-/var/tmp/feedd-ci}"
engine="${1:-all}"
cmd="${2:-start}"

up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # port what
  for _ in $(seq 1 300); do up "$1" && return 0; sleep 0.1; done
  echo "sql-replicas: $2 did not come up on port $1" >&2
  return 1
}

# --- MariaDB -------------------------------------------------------------
my_primary=3321
my_replica=3322
my_dir() { echo "$root/mariadb-$1"; }
my_sql() { # port sql...
  local p="$1"; shift
  mariadb --no-defaults -uroot --socket="$(my_dir "$p")/mysqld.sock" -N -e "$*"
}

my_start() { # port server_id extra-options...
  local p="$1" id="$2"; shift 2
  local d; d="$(my_dir "$p")"
  up "$p" && return 0
  if [[ ! -d $d/data/mysql ]]; then
    mkdir -p "$d/data"
    chown -R mysql:mysql "$d"
    mariadb-install-db --no-defaults --user=mysql --datadir="$d/data" \
      --auth-root-authentication-method=normal --skip-test-db >"$d/install.log" 2>&1
  fi
  chown -R mysql:mysql "$d"
  # Durability is traded for speed (CI only): the tests kill the replica,
  # never the primary, and the replica recovers from the primary's binlog.
  start-stop-daemon --start --background --pidfile "$d/mysqld.pid" --exec /usr/sbin/mariadbd -- \
    --no-defaults --user=mysql --datadir="$d/data" --port="$p" --bind-address=127.0.0.1 \
    --socket="$d/mysqld.sock" --pid-file="$d/mysqld.pid" --log-error="$d/error.log" \
    --server-id="$id" --log-bin="$d/data/binlog" --binlog-format=ROW --log-slave-updates \
    --skip-name-resolve --innodb-buffer-pool-size=64M --innodb-log-file-size=48M \
    --innodb-flush-log-at-trx-commit=2 --sync-binlog=0 --max-connections=500 "$@"
  wait_port "$p" "MariaDB" || { tail -20 "$d/error.log" >&2; return 1; }
  # Tests connect over TCP as root from 127.0.0.1; the grant is local to
  # each server (not binlogged).
  my_sql "$p" "SET sql_log_bin=0; CREATE USER IF NOT EXISTS root@'127.0.0.1';
    GRANT ALL ON *.* TO root@'127.0.0.1' WITH GRANT OPTION; CREATE DATABASE IF NOT EXISTS test;"
}

my_up() {
  my_start "$my_primary" 1
  my_start "$my_replica" 2 --read-only --slave-parallel-threads=0
  if [[ -z "$(my_sql "$my_replica" "SHOW SLAVE STATUS")" ]]; then
    my_sql "$my_replica" "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$my_primary,
      MASTER_USER='root', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1"
  fi
  # A test that stopped the SQL thread or set a delay and died leaves them:
  # start from a replica that applies at once.
  my_sql "$my_replica" "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY=0; START SLAVE"
  for _ in $(seq 1 100); do
    [[ "$(my_sql "$my_replica" "SELECT COUNT(*) FROM information_schema.processlist
      WHERE command = 'Slave_IO' OR user = 'system user'")" -ge 2 ]] && break
    sleep 0.1
  done
  echo "export FEEDD_TEST_MYSQL_REPLICATED_DSN='root@tcp(127.0.0.1:$my_primary)/test'"
  echo "export FEEDD_TEST_MYSQL_REPLICA_DSN='root@tcp(127.0.0.1:$my_replica)/test'"
}

my_kill() {
  local pf; pf="$(my_dir "$1")/mysqld.pid"
  [[ -f $pf ]] && kill -9 "$(cat "$pf")" 2>/dev/null || true
  for _ in $(seq 1 100); do up "$1" || return 0; sleep 0.1; done
}

# --- PostgreSQL ----------------------------------------------------------
pg_primary=5441
pg_replica=5442
pg_bin=/usr/lib/postgresql/15/bin
pg_dir() { echo "$root/postgres-$1"; }
as_pg() { runuser -u postgres -- "$@"; }

pg_start() { # port
  local d; d="$(pg_dir "$1")"
  up "$1" && return 0
  # A server killed with SIGKILL leaves postmaster.pid; pg_ctl starts over
  # it once its children are gone, which takes a moment.
  for _ in $(seq 1 50); do
    as_pg "$pg_bin/pg_ctl" -D "$d/data" -l "$d/server.log" -w -t 30 start >/dev/null 2>&1 && break
    sleep 0.2
  done
  wait_port "$1" "PostgreSQL" || { tail -20 "$d/server.log" >&2; return 1; }
}

pg_up() {
  mkdir -p "$root"
  local pd rd
  pd="$(pg_dir $pg_primary)"
  rd="$(pg_dir $pg_replica)"
  if [[ ! -f $pd/data/PG_VERSION ]]; then
    mkdir -p "$pd"
    chown postgres:postgres "$pd"
    as_pg "$pg_bin/initdb" -D "$pd/data" -U postgres --auth=trust -E UTF8 >"$pd/initdb.log"
    # fsync off: CI only, the tests never kill the primary.
    cat >>"$pd/data/postgresql.conf" <<EOF
port = $pg_primary
listen_addresses = '127.0.0.1'
unix_socket_directories = '$pd'
wal_level = replica
max_wal_senders = 5
wal_keep_size = 256MB
hot_standby_feedback = on
fsync = off
shared_buffers = 64MB
max_connections = 300
EOF
  fi
  pg_start $pg_primary
  if [[ ! -f $rd/data/PG_VERSION ]]; then
    mkdir -p "$rd"
    chown postgres:postgres "$rd"
    as_pg "$pg_bin/pg_basebackup" -h 127.0.0.1 -p $pg_primary -U postgres -D "$rd/data" -R -X stream
    printf "port = %s\nunix_socket_directories = '%s'\n" $pg_replica "$rd" >>"$rd/data/postgresql.conf"
  fi
  pg_start $pg_replica
  # A test that paused replay or set a delay and died leaves them: start
  # from a standby that applies at once.
  psql -h 127.0.0.1 -p $pg_replica -U postgres -qAt \
    -c "ALTER SYSTEM RESET recovery_min_apply_delay" -c "SELECT pg_reload_conf()" \
    -c "SELECT pg_wal_replay_resume()" >/dev/null
  echo "export FEEDD_TEST_POSTGRES_REPLICATED_DSN='postgres://postgres@127.0.0.1:$pg_primary/postgres?sslmode=disable'"
  echo "export FEEDD_TEST_POSTGRES_REPLICA_DSN='postgres://postgres@127.0.0.1:$pg_replica/postgres?sslmode=disable'"
}

pg_kill() {
  local pf; pf="$(pg_dir "$1")/data/postmaster.pid"
  [[ -f $pf ]] && kill -9 "$(head -1 "$pf")" 2>/dev/null || true
  for _ in $(seq 1 100); do up "$1" || return 0; sleep 0.1; done
}

pg_stop() {
  local p
  for p in $pg_replica $pg_primary; do
    up "$p" && as_pg "$pg_bin/pg_ctl" -D "$(pg_dir "$p")/data" -m fast -w stop >/dev/null || true
  done
}

my_stop() {
  local p
  for p in $my_replica $my_primary; do
    up "$p" && my_sql "$p" "SHUTDOWN" || true
    for _ in $(seq 1 100); do up "$p" || break; sleep 0.1; done
  done
}

case "$engine:$cmd" in
  all:start) my_up; pg_up ;;
  all:stop) my_stop; pg_stop ;;
  mariadb:start) my_up ;;
  mariadb:stop) my_stop ;;
  mariadb:kill-replica) my_kill $my_replica ;;
  mariadb:start-replica) my_start $my_replica 2 --read-only --slave-parallel-threads=0 ;;
  postgres:start) pg_up ;;
  postgres:stop) pg_stop ;;
  postgres:kill-replica) pg_kill $pg_replica ;;
  postgres:start-replica) pg_start $pg_replica ;;
  *) echo "usage: $0 [mariadb|postgres|all] [start|stop|kill-replica|start-replica]" >&2; exit 2 ;;
esac
