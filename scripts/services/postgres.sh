# shellcheck shell=bash
# Sourced by scripts/test: throwaway PostgreSQL 15 servers for the PostgreSQL
# test suites. It installs Debian's server package if initdb is missing, creates
# each cluster in a temporary directory owned by the non-root `postgres` user (the
# server refuses to run as root), listens on a Unix socket in that directory
# only (no TCP), exports HITL_TEST_PG_URL and pushes its stop command on STOP.
# One server per pytest-xdist worker ($HITL_TEST_WORKERS, set by scripts/test;
# HITL_TEST_PG_URL_<k>/HITL_TEST_PG_CTL_<k> for worker gw<k>, tests/conftest.py
# picks its own): the fault tests restart their server and read
# pg_stat_activity, which must not touch another worker's tests.
# Set HITL_TEST_PG_URL yourself to use another server instead (with
# HITL_TEST_WORKERS=1: workers sharing one server disturb each other); set
# HITL_TEST_PG=0 to skip starting one (the PostgreSQL tests then skip, or fail
# with CI=true).
if [ -n "${HITL_TEST_PG_URL:-}" ] || [ "${HITL_TEST_PG:-1}" = "0" ]; then
    return 0
fi
_pg_start() {  # _pg_start K: server K; exports HITL_TEST_PG_URL_K and HITL_TEST_PG_CTL_K
    local k=$1 bin=/usr/lib/postgresql/15/bin
    if [ ! -x "$bin/initdb" ]; then
        echo "postgres.sh: installing postgresql-15 (initdb not found in $bin)" >&2
        if [ "$(id -u)" = 0 ]; then
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null
        else
            sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null
        fi
    fi
    local as=()
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
        # From /: initdb and pg_ctl chdir back to the caller's directory, which the
        # postgres user cannot enter when the checkout is private to root (a
        # 'could not change directory ... Permission denied' per command).
        as=(runuser -u postgres -- env -C /)
    fi
    local dir
    dir=$(mktemp -d /tmp/hitl-pg.XXXXXX)
    chmod 755 "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    "${as[@]}" "$bin/initdb" -D "$dir/data" -U hitl --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; return 1; }
    # Unix socket in $dir only; no TCP listener. synchronous_commit=off: a test
    # server need not wait for the disk at every commit (committed work still
    # survives a clean restart, which is what the fault tests do).
    "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=200 -c synchronous_commit=off" \
        start >/dev/null ||
        { cat "$dir/server.log" >&2; return 1; }
    STOP+=("${as[*]} $bin/pg_ctl -D '$dir/data' -m fast -w stop >/dev/null; rm -rf '$dir'")
    "${as[@]}" "$bin/createdb" -h "$dir" -U hitl hitl_test
    export "HITL_TEST_PG_URL_$k=postgresql://hitl@/hitl_test?host=$dir"
    # For the fault tests that restart the server (pg_ctl restart reuses the options above).
    export "HITL_TEST_PG_CTL_$k=${as[*]} $bin/pg_ctl -D $dir/data -l $dir/server.log"
    echo "postgres.sh: PostgreSQL 15 on $dir (HITL_TEST_PG_URL_$k)" >&2
}
_pg_k=0
while [ "$_pg_k" -lt "${HITL_TEST_WORKERS:-1}" ] || [ "$_pg_k" = 0 ]; do
    _pg_start "$_pg_k" || return 1
    _pg_k=$((_pg_k + 1))
done
# Without xdist (or for a worker that finds no server of its own): the first one.
export HITL_TEST_PG_URL="$HITL_TEST_PG_URL_0" HITL_TEST_PG_CTL="$HITL_TEST_PG_CTL_0" HITL_TEST_PG_SERVERS="$_pg_k"
unset _pg_k
