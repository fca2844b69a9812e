# Sourced by scripts/test: one throwaway PostgreSQL cluster for the whole test run. It is
# named to the tests in SITEFS_TEST_POSTGRES_URL and SITEFS_TEST_POSTGRES_PASSWORD, and the
# test kit's PostgresCluster.shared() then uses it instead of starting one in each test
# process. The script removes it when it exits, however it exits (an EXIT trap: bash runs it
# on errors, Ctrl-C and SIGTERM too), so a test process that crashes or is killed leaves
# nothing running.
#
#   source scripts/lib/postgres-cluster.sh
#   postgres_cluster_start    # exports the two variables, sets the EXIT trap
#   ...                       # swift test
#   postgres_cluster_stop     # optional: the trap does it too; safe to call twice
#
# The cluster is made as Tests/SitefsTestSupport/PostgresCluster.swift makes its own: the
# newest /usr/lib/postgresql/*/bin, a fresh /tmp/sitefs-pg-XXXXXX (mode 0700) holding the
# data, the log and the socket, the `postgres` account running it when we are root
# (PostgreSQL refuses to run as root), the superuser `sitefs` with a random password
# (SCRAM-SHA-256, read by initdb from a private file, never argv), 127.0.0.1 and a free
# random port. fsync=off and initdb --no-sync are only for speed: a throwaway cluster's data
# need not survive a crash of the machine. Unlike the test kit, the server is a daemon of
# `pg_ctl start`: it must outlive the commands of the script, and a shell has no exit-watching
# socket for it to hold.

# The cluster's folder, its programs, and the command prefix that runs them as `postgres`
# (empty when not root); empty while there is no cluster.
_sitefs_pg_dir=""
_sitefs_pg_bin=""
_sitefs_pg_as=()

postgres_cluster_start() {
    if [ -n "$_sitefs_pg_dir" ]; then
        echo "postgres_cluster_start: a cluster is already running in $_sitefs_pg_dir" >&2
        return 1
    fi
    local version bin=""
    # Newest last (sort -V: 9.6 before 10).
    for version in $(cd /usr/lib/postgresql 2>/dev/null && printf '%s\n' * | sort -V); do
        if [ -x "/usr/lib/postgresql/$version/bin/initdb" ] && [ -x "/usr/lib/postgresql/$version/bin/pg_ctl" ]; then
            bin="/usr/lib/postgresql/$version/bin"
        fi
    done
    if [ -z "$bin" ] || ! command -v psql >/dev/null 2>&1; then
        echo "postgres_cluster_start: PostgreSQL is not installed (apt-get install postgresql)" >&2
        return 1
    fi
    local root=false
    if [ "$(id -u)" -eq 0 ]; then root=true; fi
    if $root && ! id -u postgres >/dev/null 2>&1; then
        echo "postgres_cluster_start: PostgreSQL refuses to run as root, and there is no 'postgres' account to run it as" >&2
        return 1
    fi

    local dir
    dir=$(mktemp -d /tmp/sitefs-pg-XXXXXX) || return 1
    _sitefs_pg_dir=$dir
    _sitefs_pg_bin=$bin
    _sitefs_pg_as=()
    if $root; then _sitefs_pg_as=(runuser -u postgres --); fi
    # The cleanup first, so a failure below leaves nothing. An EXIT trap set before is kept
    # and runs after ours.
    local previous
    previous=$(trap -p EXIT)
    if [ -n "$previous" ]; then
        previous=${previous#trap -- }
        eval "previous=${previous% EXIT}"
        # shellcheck disable=SC2064 # expanded now, on purpose
        trap "postgres_cluster_stop; $previous" EXIT
    else
        trap postgres_cluster_stop EXIT
    fi
    if $root; then chown postgres: "$dir" || { postgres_cluster_stop; return 1; }; fi

    local password
    password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    (umask 077 && printf '%s\n' "$password" >"$dir/password")
    if $root; then chown postgres: "$dir/password"; fi
    # In the folder: the programs, run as postgres, cannot always enter the caller's.
    if ! (cd "$dir" && timeout 60 "${_sitefs_pg_as[@]}" "$bin/initdb" -D "$dir/data" -U sitefs --auth=scram-sha-256 \
            --pwfile="$dir/password" -E UTF8 --locale=C.UTF-8 --no-sync) >"$dir/initdb.out" 2>&1; then
        echo "postgres_cluster_start: initdb failed:" >&2
        cat "$dir/initdb.out" >&2
        postgres_cluster_stop
        return 1
    fi
    rm -f "$dir/password"

    # The port is free when picked, but another process may bind it before the server does:
    # the server then exits, and another port is tried.
    local attempt port logged
    for attempt in 1 2 3; do
        port=$(_sitefs_pg_free_port)
        logged=$({ wc -l <"$dir/log"; } 2>/dev/null || echo 0)
        if (cd "$dir" && timeout 60 "${_sitefs_pg_as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" \
                -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
                -w -t 30 start) >"$dir/pg_ctl.out" 2>&1; then
            export SITEFS_TEST_POSTGRES_URL="postgres://sitefs@127.0.0.1:$port/postgres"
            export SITEFS_TEST_POSTGRES_PASSWORD="$password"
            return 0
        fi
        # A server still starting when pg_ctl gave up.
        (cd "$dir" && timeout 60 "${_sitefs_pg_as[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop) >/dev/null 2>&1 || true
        if [ "$attempt" -lt 3 ] && tail -n +"$((logged + 1))" "$dir/log" 2>/dev/null | grep -q "Address already in use"; then
            continue
        fi
        break
    done
    echo "postgres_cluster_start: PostgreSQL did not start:" >&2
    cat "$dir/pg_ctl.out" >&2
    tail -n 20 "$dir/log" >&2 2>/dev/null || true
    postgres_cluster_stop
    return 1
}

# Stops the server at once (an immediate shutdown: nothing in it is kept) and deletes its
# folder. Does nothing when there is no cluster.
postgres_cluster_stop() {
    [ -n "$_sitefs_pg_dir" ] || return 0
    local dir=$_sitefs_pg_dir
    if [ -f "$dir/data/postmaster.pid" ]; then
        if ! (cd "$dir" && timeout 60 "${_sitefs_pg_as[@]}" "$_sitefs_pg_bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop) >/dev/null 2>&1; then
            # pg_ctl could not stop it: kill it by the pid in its lock file; its backends see it
            # gone and exit.
            local pid
            pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null || true)
            if [ -n "$pid" ] && [ "$pid" -gt 1 ] 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
        fi
    fi
    rm -rf "$dir"
    _sitefs_pg_dir=""
    unset SITEFS_TEST_POSTGRES_URL SITEFS_TEST_POSTGRES_PASSWORD
}

# A port on 127.0.0.1 with nothing listening: bound once, then released (python3 is one of
# scripts/test's packages); a random high port without it.
_sitefs_pg_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null \
        || echo $((49152 + RANDOM % 16384))
}
