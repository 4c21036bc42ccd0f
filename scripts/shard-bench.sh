#!/usr/bin/env bash
# Sharded SQL against one database, on this machine: 4 logical shards on two
# MariaDB servers (shards 0-1 on the machine's 3306, 2-3 on a private server
# this script starts on 3341, data under $DIR/my3341) against one database on
# 3306, both servers with a 4 GiB buffer pool. docs/performance.md
# ("Sharded beside one database") has the figures it gave.
#
#   scripts/shard-bench.sh setup    start the second server, size both
#   scripts/shard-bench.sh import   feedd import of a 25,000-user graph's files into
#                                   fresh databases, one then sharded, twice; with
#                                   BEFORE=<another feedd binary>, each round runs
#                                   that build's pair first, then FEEDD's; with
#                                   WITH_REDIS=1, the imports correct Redis database 9
#                                   (emptied before each), as a deployment's would
#   scripts/shard-bench.sh graph    the 1M graph into feedd_b1 (one) and feedd_b4 (sharded)
#   ROUNDS="1 2" scripts/shard-bench.sh run
#                                   feedd bench run on each, alternated, per round:
#                                   $DIR/{one,four}-<round>.{json,txt}
#   scripts/shard-bench.sh stop     stop the second server (its data stays)
#
# FEEDD names the feedd binary (default: feedd on PATH). Redis database 9 and
# the machine's RabbitMQ carry the bench's children.
set -euo pipefail
F="${FEEDD:-feedd}"
DIR="${DIR:-/var/tmp/feedd-shard-bench}"
mkdir -p "$DIR"
export FEEDD_REDIS_URL=redis://127.0.0.1:6379/9 FEEDD_AMQP_URL=amqp://guest:guest@127.0.0.1:5672/
my2() { mariadb -uroot -h127.0.0.1 -P3341 "$@"; }
one() { echo "FEEDD_MYSQL_DSN=root@tcp(127.0.0.1:3306)/$1"; }
four() { echo "FEEDD_SHARDS=4 FEEDD_SHARD_DSNS=0-1=root@tcp(127.0.0.1:3306)/$1;2-3=root@tcp(127.0.0.1:3341)/$1"; }
drop() { # database prefix: the one database and the four shards
  mariadb -uroot -e "DROP DATABASE IF EXISTS $1; DROP DATABASE IF EXISTS ${1}_s0; DROP DATABASE IF EXISTS ${1}_s1"
  my2 -e "DROP DATABASE IF EXISTS ${1}_s2; DROP DATABASE IF EXISTS ${1}_s3"
}
up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

case "${1:-}" in
setup)
  if ! up 3341; then
    d="$DIR/my3341"
    mkdir -p "$d/data" && chown -R mysql:mysql "$d"
    [[ -d $d/data/mysql ]] || mariadb-install-db --no-defaults --user=mysql --datadir="$d/data" \
      --auth-root-authentication-method=normal --skip-test-db >/dev/null
    start-stop-daemon --start --background --pidfile "$d/pid" --exec /usr/sbin/mariadbd -- --no-defaults \
      --user=mysql --datadir="$d/data" --port=3341 --bind-address=127.0.0.1 --socket="$d/sock" \
      --pid-file="$d/pid" --log-error="$d/err.log" --skip-name-resolve --innodb-buffer-pool-size=4G \
      --innodb-log-file-size=96M --max-connections=1000
    for _ in $(seq 100); do up 3341 && break; sleep 0.2; done
    mariadb --no-defaults -uroot --socket="$d/sock" -e "CREATE USER IF NOT EXISTS root@'127.0.0.1';
      GRANT ALL ON *.* TO root@'127.0.0.1' WITH GRANT OPTION;"
  fi
  # Two shards' pools from each process on 3306: more than its default 151.
  mariadb -uroot -e "SET GLOBAL innodb_buffer_pool_size=4294967296; SET GLOBAL max_connections=1000"
  ;;
import)
  [[ -f $DIR/g25/likes.jsonl ]] || "$F" bench graph --jsonl "$DIR/g25" --users 25000 --out "$DIR/g25.json"
  for round in 1 2; do
    for bin in ${BEFORE:+"$BEFORE"} "$F"; do
      for how in one four; do
        drop feedd_imp
        if [[ $how == one ]]; then mariadb -uroot -e "CREATE DATABASE feedd_imp CHARACTER SET utf8mb4"; fi
        env $($how feedd_imp) "$bin" migrate >/dev/null
        echo "== import into $how, round $round, $bin${WITH_REDIS:+, with Redis}"
        # By default no Redis: nothing cached to correct, as in
        # docs/performance.md's Importing.
        unset=(-u FEEDD_REDIS_URL)
        if [[ -n ${WITH_REDIS:-} ]]; then unset=() && redis-cli -n 9 flushdb >/dev/null; fi
        env "${unset[@]}" -u FEEDD_AMQP_URL $($how feedd_imp) /usr/bin/time -f "wall %e s, peak RSS %M KiB" \
          "$bin" import --users "$DIR/g25/users.jsonl" --follows "$DIR/g25/follows.jsonl" \
          --posts "$DIR/g25/posts.jsonl" --likes "$DIR/g25/likes.jsonl" 2>&1 | grep -v '\[' || true
      done
    done
  done
  drop feedd_imp
  ;;
graph)
  G='--users 1010000 --celebrities 20 --celebrity-followers 1000000 --following 10 --posts-per-user 3'
  drop feedd_b1
  drop feedd_b4
  mariadb -uroot -e "CREATE DATABASE feedd_b1 CHARACTER SET utf8mb4"
  env $(one feedd_b1) "$F" bench graph $G --out "$DIR/graph-one.json"
  env $(four feedd_b4) "$F" migrate
  env $(four feedd_b4) "$F" bench graph $G --out "$DIR/graph-four.json"
  ;;
run)
  for round in ${ROUNDS:-1}; do
    for how in one four; do
      echo "== bench run on $how, round $round"
      b=feedd_b1
      [[ $how == four ]] && b=feedd_b4
      env $($how $b) "$F" bench run --graph "$DIR/graph-$how.json" --work-procs 1 \
        --json "$DIR/$how-$round.json" >"$DIR/$how-$round.txt" 2>"$DIR/$how-$round.err"
    done
  done
  ;;
stop)
  [[ -f $DIR/my3341/pid ]] && kill "$(cat "$DIR/my3341/pid")" 2>/dev/null || true
  ;;
*)
  sed -n '2,20p' "$0"
  exit 2
  ;;
esac
