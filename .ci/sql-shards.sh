#!/usr/bin/env bash
# Starts the second SQL servers the sharded tests place logical shards on,
# apart from the machine's own MariaDB (3306) and PostgreSQL (5432):
#   MariaDB 10.11 on 127.0.0.1:3331, PostgreSQL 15 on 127.0.0.1:5451.
# A sharded test puts half of its shards on the machine's server and half
# on these (testenv.ShardSpec). Data lives under $FEEDD_CI_DIR (default
# /var/tmp/feedd-ci). Idempotent: a server that answers is left alone.
#
#   .ci/sql-shards.sh [start]   start them; print the test variables as
#                               `export NAME=value` lines (eval them):
#                               FEEDD_TEST_SHARD_MYSQL, FEEDD_TEST_SHARD_POSTGRES
#   .ci/sql-shards.sh kill-mysql    SIGKILL the MariaDB (a dead shard server)
#   .ci/sql-shards.sh start-mysql   start it again and wait for it
#   .ci/sql-shards.sh stop          stop both (data kept)
set -euo pipefail

root="${FEEDD_CI_DIR:-/var/tmp/feedd-ci}"
cmd="${1:-start}"
my_port=3331
pg_port=5451
my_dir="$root/shard-mariadb-$my_port"
pg_dir="$root/shard-postgres-$pg_port"
pg_bin=/usr/lib/postgresql/15/bin

up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # port what
  for _ in $(seq 1 300); do up "$1" && return 0; sleep 0.1; done
  echo "sql-shards: $2 did not come up on port $1" >&2
  return 1
}

my_start() {
  up "$my_port" && return 0
  if [[ ! -d $my_dir/data/mysql ]]; then
    mkdir -p "$my_dir/data"
    chown -R mysql:mysql "$my_dir"
    mariadb-install-db --no-defaults --user=mysql --datadir="$my_dir/data" \
      --auth-root-authentication-method=normal --skip-test-db >"$my_dir/install.log" 2>&1
  fi
  chown -R mysql:mysql "$my_dir"
  # Durable as a production server (flush at commit): the dead-shard test
  # kills it and counts what survived.
  start-stop-daemon --start --background --pidfile "$my_dir/mysqld.pid" --exec /usr/sbin/mariadbd -- \
    --no-defaults --user=mysql --datadir="$my_dir/data" --port="$my_port" --bind-address=127.0.0.1 \
    --socket="$my_dir/mysqld.sock" --pid-file="$my_dir/mysqld.pid" --log-error="$my_dir/error.log" \
    --skip-name-resolve --innodb-buffer-pool-size=128M --innodb-log-file-size=48M \
    --max-connections=800
  wait_port "$my_port" "MariaDB" || { tail -20 "$my_dir/error.log" >&2; return 1; }
  mariadb --no-defaults -uroot --socket="$my_dir/mysqld.sock" -N -e "CREATE USER IF NOT EXISTS root@'127.0.0.1';
    GRANT ALL ON *.* TO root@'127.0.0.1' WITH GRANT OPTION;"
}

my_kill() {
  [[ -f $my_dir/mysqld.pid ]] && kill -9 "$(cat "$my_dir/mysqld.pid")" 2>/dev/null || true
  for _ in $(seq 1 100); do up "$my_port" || return 0; sleep 0.1; done
}

as_pg() { runuser -u postgres -- "$@"; }

pg_start() {
  up "$pg_port" && return 0
  if [[ ! -f $pg_dir/data/PG_VERSION ]]; then
    mkdir -p "$pg_dir"
    chown postgres:postgres "$pg_dir"
    as_pg "$pg_bin/initdb" -D "$pg_dir/data" -U postgres --auth=trust -E UTF8 >"$pg_dir/initdb.log"
    cat >>"$pg_dir/data/postgresql.conf" <<CONF
port = $pg_port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$pg_dir'
shared_buffers = 64MB
max_connections = 400
CONF
  fi
  for _ in $(seq 1 50); do
    as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 30 start >/dev/null 2>&1 && break
    sleep 0.2
  done
  wait_port "$pg_port" "PostgreSQL" || { tail -20 "$pg_dir/server.log" >&2; return 1; }
}

case "$cmd" in
  start)
    mkdir -p "$root"
    my_start
    pg_start
    echo "export FEEDD_TEST_SHARD_MYSQL='root@tcp(127.0.0.1:$my_port)/'"
    echo "export FEEDD_TEST_SHARD_POSTGRES='postgres://postgres@127.0.0.1:$pg_port/'"
    ;;
  kill-mysql) my_kill ;;
  start-mysql) my_start ;;
  stop)
    my_kill
    [[ -f $pg_dir/data/PG_VERSION ]] && as_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast stop >/dev/null 2>&1 || true
    ;;
  *) echo "usage: $0 [start|kill-mysql|start-mysql|stop]" >&2; exit 2 ;;
esac
